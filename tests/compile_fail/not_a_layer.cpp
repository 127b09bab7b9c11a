// expect: Sequential: this element is not a layer
// Only layers may appear inside Sequential. The twin (without MEMOPT_FAILTEST) puts a Dense
// in that place and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Middle = int;
#else
using Middle = memopt::Dense<8>;
#endif

using Net = memopt::Sequential<memopt::Dense<16, memopt::ReLU>, Middle, memopt::Dense<10>>;
Net net;
