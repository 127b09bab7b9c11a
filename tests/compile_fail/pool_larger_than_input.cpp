// expect: MaxPooling2D: the pool is larger than its input image; use a smaller pool, padding Same
// After a valid 3x3 convolution a 5x5 image is 3x3: a 4x4 pool does not fit. The twin
// (without MEMOPT_FAILTEST) pools 2x2 and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
constexpr int pool = 4;
#else
constexpr int pool = 2;
#endif

using Net = memopt::Sequential<memopt::Conv2D<8, 3, memopt::ReLU>, memopt::MaxPooling2D<pool>,
                               memopt::Flatten, memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<5, 5, 1>, memopt::float32> spec;
