// expect: Sequential: Softmax is only allowed on the last layer, where it is fused with the loss
// Softmax over a convolution's channels is not a classifier's output; in memopt Softmax is
// fused with the loss and must end the model. The twin (without MEMOPT_FAILTEST) has ReLU in
// its place and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Hidden = memopt::Softmax;
#else
using Hidden = memopt::ReLU;
#endif

using Net = memopt::Sequential<memopt::Conv2D<8, 3, memopt::Same, Hidden>, memopt::MaxPooling2D<2>,
                               memopt::Flatten, memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
