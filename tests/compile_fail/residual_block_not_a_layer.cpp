// expect: Residual: every element of a block or a shortcut must be a layer
// A bare activation in a block is not a layer (Keras's Activation("relu") is Activation<ReLU>):
// the diagnostic says what a block may hold. The twin writes the layer.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Block = mo::Sequential<mo::ReLU, mo::Dense<8>>;
#else
using Block = mo::Sequential<mo::Activation<mo::ReLU>, mo::Dense<8>>;
#endif
using Net = mo::Sequential<mo::Dense<8>, mo::Residual<Block>, mo::Dense<3, mo::Softmax>>;

mo::ModelSpec<Net, mo::Input<5>, mo::float32> spec;
