// expect: MaxPooling2D: a stride of 0 does not move the window; the stride must be at least 1
// A zero stride (here along the width only) would read the same window forever. The twin
// (without MEMOPT_FAILTEST) strides by 2 along both axes and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Stride = memopt::Strides<2, 0>;
#else
using Stride = memopt::Strides<2, 2>;
#endif

using Net = memopt::Sequential<memopt::Conv2D<8, 3, memopt::Same, memopt::ReLU>,
                               memopt::MaxPooling2D<2, Stride>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
