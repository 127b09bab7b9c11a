// expect: Recompute: this layer's output is read by a residual's Add or by both branches
// Recompute reruns a layer just before the one layer above it needs its output; the output of
// the layer before a Residual is read by the block and by the Add, so it cannot recompute. The
// twin recomputes a layer inside the block, whose output only the next layer reads.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Net = mo::Sequential<mo::Dense<8, mo::Recompute<mo::ReLU>>,
                           mo::Residual<mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<8>>>,
                           mo::Dense<3, mo::Softmax>>;
#else
using Net = mo::Sequential<
    mo::Dense<8, mo::ReLU>,
    mo::Residual<mo::Sequential<mo::Dense<16, mo::Recompute<mo::ReLU>>, mo::Dense<8>>>,
    mo::Dense<3, mo::Softmax>>;
#endif

mo::ModelSpec<Net, mo::Input<5>, mo::float32> spec;
