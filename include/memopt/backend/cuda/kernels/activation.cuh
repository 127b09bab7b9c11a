#pragma once
// Element-wise kernels around the products: activations cuBLASLt has no epilogue for
// (Sigmoid, Tanh), the recomputation of GELU from its kept input, the backward of activations
// with the bias gradient, and the forward epilogue (bias, activation, mask, GELU input) when
// cuBLASLt has no algorithm with it. The math per value is epilogue_math.hpp's, shared with
// the host tests.

#include <cstddef>
#include <cstdint>

#include "memopt/backend/cuda/control.hpp"
#include "memopt/backend/cuda/epilogue_math.hpp"
#include "memopt/backend/cuda/kernels/element.cuh"
#include "memopt/backend/cuda/kernels/grid_reduce.cuh"
#include "memopt/layers/activation.hpp"

namespace memopt::cuda_backend::kernels {

/// epilogue_math.hpp's load/store policy for device code: the hardware's conversions.
struct DeviceConvert {
  template <class E>
  static __device__ __forceinline__ float load(E v) {
    return to_float(v);
  }
  template <class E>
  static __device__ __forceinline__ E store(float f) {
    return from_float<E>(f);
  }
};

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
    dst[j] = from_float<E>(u < width ? epilogue::activate(kind, to_float(src[j])) : 0.0f);
  }
}

/// The forward epilogue after a plain product, when cuBLASLt has no algorithm with the fused
/// one: epilogue::forward_item over every item.
template <class Out, class Bias, class Pre>
__global__ void __launch_bounds__(block_threads)
    epilogue_forward(epilogue::ForwardArgs<Out, Bias, Pre> a) {
  const std::size_t n = epilogue::forward_items(a);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    epilogue::forward_item<DeviceConvert>(a, i);
}

/// Arguments of activation_backward: the values (epilogue::BackwardArgs) and the reduction.
template <class T>
struct ActivationBackwardArgs {
  epilogue::BackwardArgs<T> values;  // dL/da in, dL/dz out, and what f' is read from
  float* bias_grad = nullptr;        // ld floats: sum over rows of dL/dz
  float* partial = nullptr;          // max_reduce_blocks x ld floats of scratch
  DeviceControl* control = nullptr;  // the ticket
};

/// dL/dz = dL/da * f' in place, and the bias gradient (its sum over rows) in the same pass.
/// Threads run along the features, so every row is read in coalesced segments.
template <class T>
__global__ void __launch_bounds__(block_threads) activation_backward(ActivationBackwardArgs<T> a) {
  const int ld = static_cast<int>(a.values.ld), rows = static_cast<int>(a.values.rows);
  for (int u = static_cast<int>(threadIdx.x); u < ld; u += static_cast<int>(blockDim.x)) {
    float sum = 0.0f;
    for (int r = static_cast<int>(blockIdx.x); r < rows; r += static_cast<int>(gridDim.x))
      sum += epilogue::backward_value<DeviceConvert>(a.values, static_cast<std::size_t>(r),
                                                     static_cast<std::size_t>(u));
    a.partial[static_cast<std::size_t>(blockIdx.x) * ld + u] = sum;
  }
  if (!last_block_done(&a.control->reductions.reduce_ticket)) return;
  const int blocks = static_cast<int>(gridDim.x);
  for (int u = static_cast<int>(threadIdx.x); u < ld; u += static_cast<int>(blockDim.x)) {
    float s = 0.0f;
    for (int b = 0; b < blocks; ++b) s += __ldcg(a.partial + static_cast<std::size_t>(b) * ld + u);
    a.bias_grad[u] = s;
  }
}

}  // namespace memopt::cuda_backend::kernels
