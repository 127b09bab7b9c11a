// expect: Conv2D: each kind of option may be given once: one activation, one padding \(Same or
// Valid\), one Strides<height, width> Two paddings: which one was meant cannot be told. The twin
// (without MEMOPT_FAILTEST) gives one and must compile.
#include <memopt/memopt.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Layer = mo::Conv2D<8, 3, mo::Same, mo::ReLU, mo::Valid>;
#else
using Layer = mo::Conv2D<8, 3, mo::Same, mo::ReLU>;
#endif

using Net = mo::Sequential<Layer, mo::Flatten, mo::Dense<10, mo::Softmax>>;
mo::ModelSpec<Net, mo::Input<8, 8, 1>, mo::float32> spec;
