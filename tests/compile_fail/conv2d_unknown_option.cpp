// expect: Conv2D: after the filters and the kernel size, each argument must be an activation
// \(ReLU, Sigmoid, Tanh, GELU, Softmax, Linear\), a padding \(Same or Valid\) or Strides<height,
// width>, in any order A layer passed where Conv2D takes its options. The twin (without
// MEMOPT_FAILTEST) passes a padding there and must compile.
#include <memopt/memopt.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Option = mo::BatchNormalization;
#else
using Option = mo::Same;
#endif

using Net =
    mo::Sequential<mo::Conv2D<8, 3, mo::ReLU, Option>, mo::Flatten, mo::Dense<10, mo::Softmax>>;
mo::ModelSpec<Net, mo::Input<8, 8, 1>, mo::float32> spec;
