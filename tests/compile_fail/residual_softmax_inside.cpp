// expect: Softmax is only allowed on the model's last layer
// Softmax is fused with the loss on the model's last layer: inside a residual block, where the
// Sequential's own check does not look, the model refuses it. The twin uses Linear there.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Block = mo::Dense<8, mo::Softmax>;
#else
using Block = mo::Dense<8>;
#endif
using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Residual<Block>, mo::Dense<3, mo::Softmax>>;

mo::ModelSpec<Net, mo::Input<5>, mo::float32> spec;
