#pragma once
// Element-wise activations cuBLASLt has no epilogue for (Sigmoid, Tanh), the recomputation of
// GELU from its kept input, and the backward of activations whose derivative is read from the
// output, fused with the bias gradient.

#include <cstddef>
#include <cstdint>

#include "memopt/backend/cuda/control.hpp"
#include "memopt/backend/cuda/kernels/element.cuh"
#include "memopt/backend/cuda/kernels/grid_reduce.cuh"
#include "memopt/layers/activation.hpp"

namespace memopt::cuda_backend::kernels {

__device__ __forceinline__ float activate(ActivationKind kind, float z) {
  switch (kind) {
    case ActivationKind::relu:
      return ReLU::apply(z);
    case ActivationKind::sigmoid:
      return Sigmoid::apply(z);
    case ActivationKind::tanh:
      return Tanh::apply(z);
    case ActivationKind::gelu:
      return GELU::apply(z);
    default:
      return z;
  }
}

/// `dst = f(src)` over rows x ld (in place when they are the same), zeros in the padding
/// (Sigmoid would make them 0.5, and the next layer's weight gradient would see them).
template <class E>
__global__ void __launch_bounds__(block_threads)
    activation_forward(ActivationKind kind, const E* src, E* dst, int rows, int width, int ld) {
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(ld);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; j < n;
       j += stride) {
    const int u = static_cast<int>(j % static_cast<std::size_t>(ld));
    dst[j] = from_float<E>(u < width ? activate(kind, to_float(src[j])) : 0.0f);
  }
}

/// Arguments of activation_backward.
template <class T>
struct ActivationBackwardArgs {
  ActivationKind kind = ActivationKind::linear;
  T* grad = nullptr;       // rows x ld: dL/da in, dL/dz out
  const T* out = nullptr;  // rows x ld: a = f(z)
  int rows = 0, width = 0, ld = 0;
  float* bias_grad = nullptr;        // ld floats: sum over rows of dL/dz
  float* partial = nullptr;          // max_reduce_blocks x ld floats of scratch
  DeviceControl* control = nullptr;  // the ticket
};

/// dL/dz = dL/da * f'(a) in place, and the bias gradient (its sum over rows) in the same
/// pass. Threads run along the features, so every row is read in coalesced segments.
template <class T>
__global__ void __launch_bounds__(block_threads) activation_backward(ActivationBackwardArgs<T> a) {
  for (int u = static_cast<int>(threadIdx.x); u < a.ld; u += static_cast<int>(blockDim.x)) {
    float sum = 0.0f;
    for (int r = static_cast<int>(blockIdx.x); r < a.rows; r += static_cast<int>(gridDim.x)) {
      const std::size_t j = static_cast<std::size_t>(r) * static_cast<std::size_t>(a.ld) + u;
      float g = 0.0f;
      if (u < a.width) g = to_float(a.grad[j]) * derivative_from_output(a.kind, to_float(a.out[j]));
      const T stored = from_float<T>(g);
      a.grad[j] = stored;
      sum += to_float(stored);  // the value the weight gradient reads, as on the CPU
    }
    a.partial[static_cast<std::size_t>(blockIdx.x) * a.ld + u] = sum;
  }
  if (!last_block_done(&a.control->reductions.reduce_ticket)) return;
  const int blocks = static_cast<int>(gridDim.x);
  for (int u = static_cast<int>(threadIdx.x); u < a.ld; u += static_cast<int>(blockDim.x)) {
    float s = 0.0f;
    for (int b = 0; b < blocks; ++b)
      s += __ldcg(a.partial + static_cast<std::size_t>(b) * a.ld + u);
    a.bias_grad[u] = s;
  }
}

}  // namespace memopt::cuda_backend::kernels
