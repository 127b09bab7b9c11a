// expect: Dense: the second argument must be an activation
// The twin (without MEMOPT_FAILTEST) passes ReLU and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Activation = float;
#else
using Activation = memopt::ReLU;
#endif

memopt::Dense<16, Activation> layer;
