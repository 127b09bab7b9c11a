// expect: UpdateInBackward: not yet supported by the CUDA backend; use mo::cpu
// The CUDA backend's fused update runs once per step, after backward: a model that asks for
// the update inside backward is refused for mo::cuda. The twin, the same model under float32,
// is one the CUDA backend runs.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

namespace mo = memopt;

using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<3, mo::Softmax>>;
#ifdef MEMOPT_FAILTEST
using P = mo::UpdateInBackward<>;
#else
using P = mo::float32;
#endif

static_assert(mo::cuda_backend::supports_v<mo::ModelSpec<Net, mo::Input<5>, P>>);
