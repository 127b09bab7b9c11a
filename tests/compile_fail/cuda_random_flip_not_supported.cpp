// expect: RandomFlip: not yet supported by the CUDA backend; use mo::cpu
// The augmentation layers run on the CPU only for now: a CUDA model with one is refused by
// name. The twin, a Dense model on the same values as a vector, is one the CUDA backend runs.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Net =
    memopt::Sequential<memopt::RandomFlip<>, memopt::Flatten, memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<4, 4, 3>;
#else
using Net = memopt::Sequential<memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<48>;
#endif

static_assert(memopt::cuda_backend::supports_v<memopt::ModelSpec<Net, In, memopt::float32>>);
