// expect: RandomCrop: not yet supported by the CUDA backend; use mo::cpu
// RandomCrop runs on the CPU only for now: a CUDA model with it is refused by name. The twin,
// a Dense model on the same values as a vector, is one the CUDA backend runs.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::RandomCrop<3, 3>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<4, 4, 3>;
#else
using Net = memopt::Sequential<memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<27>;
#endif

static_assert(memopt::cuda_backend::supports_v<memopt::ModelSpec<Net, In, memopt::float32>>);
