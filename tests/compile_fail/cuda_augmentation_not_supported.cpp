// expect: RandomRotation: not yet supported by the CUDA backend; use mo::cpu
// The CUDA executor asserts cuda_backend::supports_v<Spec> first; this host-only check shows
// the message a model with an augmentation layer gets from nvcc. The twin (without
// MEMOPT_FAILTEST) leaves the augmentation out and must compile.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::RandomRotation<std::ratio<1, 10>>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<4, 4, 1>;
#else
using Net = memopt::Sequential<memopt::Dense<16, memopt::ReLU>, memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<8>;
#endif

static_assert(memopt::cuda_backend::supports_v<memopt::ModelSpec<Net, In, memopt::float32>>);
