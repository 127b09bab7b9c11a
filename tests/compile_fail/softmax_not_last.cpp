// expect: Sequential: Softmax is only allowed on the last layer
// Softmax is fused with the loss, so it must end the model.
#include <memopt/memopt.hpp>

using Net = memopt::Sequential<memopt::Dense<16, memopt::Softmax>, memopt::Dense<10>>;
Net net;
