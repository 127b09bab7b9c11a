// expect: Conv2D: a stride of 0 does not move the window; the stride must be at least 1
// A zero stride would read the same window forever. The twin (without MEMOPT_FAILTEST)
// strides by 1 and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
constexpr int stride = 0;
#else
constexpr int stride = 1;
#endif

using Net =
    memopt::Sequential<memopt::Conv2D<8, 3, memopt::Strides<stride>, memopt::Same, memopt::ReLU>,
                       memopt::GlobalAveragePooling2D, memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
