// expect: Model: the second argument must be an Input<N>
#include <memopt/memopt.hpp>

using Net = memopt::Sequential<memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, int, memopt::float32> spec;
