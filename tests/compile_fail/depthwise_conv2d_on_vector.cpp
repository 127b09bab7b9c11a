// expect: DepthwiseConv2D: its input must be an image \(height, width, channels\)
// A depthwise convolution needs a height, a width and channels: on a vector it does not
// compile, and the message says what to write. The twin convolves the image and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

using Head = memopt::Dense<4, memopt::Softmax>;
#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::DepthwiseConv2D<3>, Head>;
using In = memopt::Input<48>;
#else
using Net = memopt::Sequential<memopt::DepthwiseConv2D<3>, memopt::Flatten, Head>;
using In = memopt::Input<4, 4, 3>;
#endif

memopt::ModelSpec<Net, In, memopt::float32> spec;
