// expect: Sequential: this element is not a layer
// Only layers may appear inside Sequential.
#include <memopt/memopt.hpp>

using Net = memopt::Sequential<memopt::Dense<16, memopt::ReLU>, int, memopt::Dense<10>>;
Net net;
