// expect: Dense: Units must be at least 1
// A layer with no outputs is a mistake the compiler can see.
#include <memopt/memopt.hpp>

using Net = memopt::Sequential<memopt::Dense<0, memopt::ReLU>, memopt::Dense<10>>;
memopt::ModelSpec<Net, memopt::Input<4>, memopt::float32> spec;
