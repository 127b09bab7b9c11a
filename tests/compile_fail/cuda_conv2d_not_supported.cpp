// expect: Conv2D: not yet supported by the CUDA backend; use mo::cpu
// The CUDA executor asserts cuda_backend::supports_v<Spec> before anything else; this host-only
// check (layer_support.hpp needs no CUDA header) shows the message a CNN with mo::cuda gets
// from nvcc. The twin (without MEMOPT_FAILTEST) is a Dense-only model, which the CUDA backend
// runs, and must compile.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::Conv2D<8, 3, memopt::ReLU>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<6, 6, 1>;
#else
using Net = memopt::Sequential<memopt::Dense<16, memopt::ReLU>, memopt::Dense<10, memopt::Softmax>>;
using In = memopt::Input<36>;
#endif

static_assert(memopt::cuda_backend::supports_v<memopt::ModelSpec<Net, In, memopt::float32>>);
