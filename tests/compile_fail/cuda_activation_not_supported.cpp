// expect: Activation: not yet supported by the CUDA backend; use mo::cpu, or give the
// The CUDA executor asserts cuda_backend::supports_v<Spec> first; this host-only check shows
// the message a model with an Activation layer gets from nvcc. The twin (without
// MEMOPT_FAILTEST) gives the ReLU to the Dense layer, which the CUDA backend runs.
#include <memopt/backend/cuda/layer_support.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<memopt::Dense<16>, memopt::Activation<memopt::ReLU>,
                               memopt::Dense<10, memopt::Softmax>>;
#else
using Net = memopt::Sequential<memopt::Dense<16, memopt::ReLU>, memopt::Dense<10, memopt::Softmax>>;
#endif

static_assert(
    memopt::cuda_backend::supports_v<memopt::ModelSpec<Net, memopt::Input<8>, memopt::float32>>);
