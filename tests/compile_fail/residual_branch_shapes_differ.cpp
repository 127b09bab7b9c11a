// expect: Residual: the block's output and the shortcut's output differ in shape
// A block that halves the image beside an identity shortcut cannot be added to it: the model
// does not compile, and the instantiation names both shapes (4x4x8 and 8x8x8). The twin gives
// the shortcut the tutorial's strided 1x1 convolution, which makes the shapes equal.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

using Block = mo::Conv2D<8, 3, mo::Strides<2>, mo::Same>;
#ifdef MEMOPT_FAILTEST
using Shortcut = mo::Identity;
#else
using Shortcut = mo::Conv2D<8, 1, mo::Strides<2>, mo::Same>;
#endif
using Net = mo::Sequential<mo::Conv2D<8, 3, mo::Same>, mo::Residual<Block, Shortcut>, mo::Flatten,
                           mo::Dense<3, mo::Softmax>>;

mo::ModelSpec<Net, mo::Input<8, 8, 3>, mo::float32> spec;
