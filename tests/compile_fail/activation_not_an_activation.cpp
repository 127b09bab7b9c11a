// expect: Activation: the argument must be an activation
// Activation<Act> takes an activation tag, not a Keras string or a number. The twin (without
// MEMOPT_FAILTEST) passes ReLU and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Act = float;
#else
using Act = memopt::ReLU;
#endif

using Net = memopt::Sequential<memopt::Dense<16>, memopt::Activation<Act>,
                               memopt::Dense<10, memopt::Softmax>>;
Net net;
