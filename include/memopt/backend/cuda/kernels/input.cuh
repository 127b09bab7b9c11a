#pragma once
// load_batch: the batch from its source (pinned host memory or device memory) into the arena,
// converted to the compute type and padded to the device width.

#include <cstddef>
#include <cstdint>

#include "memopt/backend/cuda/kernels/element.cuh"
#include "memopt/backend/cuda/kernels/grid_reduce.cuh"

namespace memopt::cuda_backend::kernels {

/// `dst` (rows x ld, sample after sample) = `x` (rows x inputs) converted to T, zeros in the
/// padding; `labels` = `y` when both are given. Reading pinned host memory here directly is the
/// batch's only transfer: no device staging copy, no separate conversion pass.
template <class T>
__global__ void __launch_bounds__(block_threads)
    load_batch(const float* __restrict__ x, const std::int32_t* __restrict__ y, int rows,
               int inputs, int ld, T* __restrict__ dst, std::int32_t* __restrict__ labels) {
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(ld);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; j < n;
       j += stride) {
    const std::size_t r = j / static_cast<std::size_t>(ld);
    const int u = static_cast<int>(j - r * static_cast<std::size_t>(ld));
    dst[j] = from_float<T>(u < inputs ? x[r * static_cast<std::size_t>(inputs) + u] : 0.0f);
  }
  if (y && labels) {
    for (std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
         j < static_cast<std::size_t>(rows); j += stride)
      labels[j] = y[j];
  }
}

}  // namespace memopt::cuda_backend::kernels
