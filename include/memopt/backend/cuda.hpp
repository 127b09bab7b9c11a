#pragma once
// memopt's CUDA backend: `mo::Model<Net, In, Policy, mo::cuda>`.
//
// Include it after <memopt/memopt.hpp> in a .cu file compiled by nvcc, and link
// `memopt::cuda` (CMake), which brings cudart and cuBLASLt:
//
// ```cpp
// #include <memopt/memopt.hpp>
// #include <memopt/backend/cuda.hpp>
// namespace mo = memopt;
// using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
// auto model = mo::Model<Net, mo::Input<784>, mo::mixed_float16, mo::cuda>{42};
// ```

#if !defined(__CUDACC__)
#error "memopt/backend/cuda.hpp: include it from a .cu file compiled by nvcc (it holds kernels)"
#endif

#include "memopt/backend/cuda/executor.hpp"
#include "memopt/backend/cuda/status.hpp"
#include "memopt/core/backend.hpp"

namespace memopt {

template <class Spec>
struct executor_for<cuda, Spec> {
  using type = cuda_backend::Executor<Spec>;
};

}  // namespace memopt
