// expect: Conv2D: the kernel is larger than its input image; use a smaller kernel, padding Same
// A 5x5 kernel cannot slide over a 4x4 image without padding. The twin (without
// MEMOPT_FAILTEST) uses a 3x3 kernel and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
constexpr int kernel = 5;
#else
constexpr int kernel = 3;
#endif

using Net = memopt::Sequential<memopt::Conv2D<8, kernel, memopt::ReLU>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<4, 4, 1>, memopt::float32> spec;
