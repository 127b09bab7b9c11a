// expect: Residual: not yet supported by the CUDA backend; use mo::cpu
// Residual blocks run on the CPU only for now: a CUDA model with one is refused by name. The
// twin, the same Dense layers as a chain, is one the CUDA backend runs.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Residual<mo::Dense<8, mo::ReLU>>,
                           mo::Dense<3, mo::Softmax>>;
#else
using Net =
    mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<8, mo::ReLU>, mo::Dense<3, mo::Softmax>>;
#endif

static_assert(mo::cuda_backend::supports_v<mo::ModelSpec<Net, mo::Input<5>, mo::float32>>);
