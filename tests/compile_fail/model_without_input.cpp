// expect: Model: the second argument must be an Input<N>
// The twin (without MEMOPT_FAILTEST) passes Input<4> and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using In = int;
#else
using In = memopt::Input<4>;
#endif

using Net = memopt::Sequential<memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, In, memopt::float32> spec;
