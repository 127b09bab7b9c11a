// expect: Dense: its input is an image .*put Flatten or GlobalAveragePooling2D before Dense
// Dense takes a vector; a convolution's output is an image. The twin (without
// MEMOPT_FAILTEST) flattens it first and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

using Conv = memopt::Conv2D<8, 3, memopt::ReLU>;
using Head = memopt::Dense<10, memopt::Softmax>;
#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<Conv, Head>;
#else
using Net = memopt::Sequential<Conv, memopt::Flatten, Head>;
#endif

memopt::ModelSpec<Net, memopt::Input<6, 6, 1>, memopt::float32> spec;
