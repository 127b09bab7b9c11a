#pragma once
// The pieces the project's kernels share for reductions across a whole grid without a second
// launch: warp sums, and "is this the last block to finish" with a ticket counter.

#include <cstdint>

#include "memopt/backend/cuda/launch_limits.hpp"  // block_threads, max_reduce_blocks

namespace memopt::cuda_backend::kernels {

template <class V>
__device__ __forceinline__ V warp_sum(V v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// True, in every thread of the block, for the last block of the grid to get here. Each
/// block's writes before the call are visible to the last block after it. The last block
/// returns `*ticket` to zero, ready for the next launch (a CUDA graph replays the launch with
/// the same counter).
__device__ __forceinline__ bool last_block_done(std::uint32_t* ticket) {
  __shared__ bool last;
  __threadfence();  // publish this thread's partial results before the block takes its ticket
  __syncthreads();
  if (threadIdx.x == 0) {
    const std::uint32_t t = atomicAdd(ticket, 1u);
    last = t == gridDim.x - 1;
    if (last) *ticket = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

}  // namespace memopt::cuda_backend::kernels
