// expect: Sequential: Softmax is only allowed on the last layer
// Activation<Softmax> is fused with the loss as Dense<N, Softmax> is, so it must end the
// model. The twin (without MEMOPT_FAILTEST) has it last and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Net =
    memopt::Sequential<memopt::Dense<16>, memopt::Activation<memopt::Softmax>, memopt::Dense<10>>;
#else
using Net =
    memopt::Sequential<memopt::Dense<16>, memopt::Dense<10>, memopt::Activation<memopt::Softmax>>;
#endif
Net net;
