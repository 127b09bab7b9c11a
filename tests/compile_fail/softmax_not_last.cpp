// expect: Sequential: Softmax is only allowed on the last layer
// Softmax is fused with the loss, so it must end the model. The twin (without
// MEMOPT_FAILTEST) has ReLU in its place and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Hidden = memopt::Softmax;
#else
using Hidden = memopt::ReLU;
#endif

using Net = memopt::Sequential<memopt::Dense<16, Hidden>, memopt::Dense<10>>;
Net net;
