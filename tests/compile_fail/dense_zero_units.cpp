// expect: Dense: Units must be at least 1
// A layer with no outputs is a mistake the compiler can see. The twin (without
// MEMOPT_FAILTEST) has one unit and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
constexpr int units = 0;
#else
constexpr int units = 1;
#endif

using Net = memopt::Sequential<memopt::Dense<units, memopt::ReLU>, memopt::Dense<10>>;
memopt::ModelSpec<Net, memopt::Input<4>, memopt::float32> spec;
