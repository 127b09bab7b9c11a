// expect: Model: a Residual cannot be the network's last element
// The loss reads the last layer's outputs (its logits, fused with Softmax): a model cannot end
// in a residual's Add. The twin puts the Dense head after the block.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Residual<mo::Dense<8, mo::ReLU>>>;
#else
using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Residual<mo::Dense<8, mo::ReLU>>,
                           mo::Dense<3, mo::Softmax>>;
#endif

mo::ModelSpec<Net, mo::Input<5>, mo::float32> spec;
