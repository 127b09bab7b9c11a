#pragma once
// Launch shapes of the CUDA backend's kernels and the shared memory they need, as host
// constants: no CUDA header, so host code (and tests/unit under g++) can check the limits
// for every padded width without a GPU.

#include <cstddef>

namespace memopt::cuda_backend {

/// Shared memory one block may use without opting in with
/// `cudaFuncAttributeMaxDynamicSharedMemorySize`: 48 KiB on every GPU CUDA supports. The
/// backend's kernels stay within it, so no launch depends on the opt-in.
inline constexpr std::size_t default_shared_bytes = std::size_t{48} * 1024;

namespace kernels {

/// Threads per block of every kernel of the backend.
inline constexpr int block_threads = 256;

/// Blocks of the kernels that reduce across the grid: enough to fill a GPU, few enough that
/// the last block sums the per-block partials quickly. Partial buffers are sized for this.
inline constexpr int max_reduce_blocks = 256;

/// Static shared memory of softmax_cross_entropy, rounded up: a double loss sum and a double
/// correct count per warp, and last_block_done's flag. tests/cuda checks it against what
/// the compiler reports (cudaFuncGetAttributes).
inline constexpr std::size_t loss_static_shared_bytes =
    2 * (block_threads / 32) * sizeof(double) + 16;

/// Largest padded class count (a multiple of 8) whose per-warp bias partial sums fit in
/// shared memory beside the static part; above it, warps add into one shared row with
/// atomics (same values, summation order not fixed).
inline constexpr int deterministic_classes =
    static_cast<int>((default_shared_bytes - loss_static_shared_bytes) / sizeof(float) /
                     (block_threads / 32) / 8 * 8);

/// Largest padded class count the loss kernel takes at all: one shared row of floats.
inline constexpr std::size_t max_loss_classes =
    (default_shared_bytes - loss_static_shared_bytes) / sizeof(float) / 8 * 8;

/// What softmax_cross_entropy computes besides the loss and the correct count.
enum class LossMode : int {
  train,          // dL/dz (times the loss scale) and the last layer's bias gradient
  evaluate,       // nothing more
  probabilities,  // softmax(z) in place of the logits (predict)
};

/// Dynamic shared memory softmax_cross_entropy needs for `ld` padded classes in `mode`.
///
/// ```cpp
/// static_assert(loss_shared_bytes(LossMode::train, 16) == 16 * 8 * sizeof(float));
/// ```
constexpr std::size_t loss_shared_bytes(LossMode mode, int ld) {
  if (mode != LossMode::train) return 0;
  const int rows = ld <= deterministic_classes ? block_threads / 32 : 1;
  return static_cast<std::size_t>(ld) * static_cast<std::size_t>(rows) * sizeof(float);
}

/// Static plus dynamic shared memory of one softmax_cross_entropy block.
constexpr std::size_t loss_total_shared_bytes(LossMode mode, int ld) {
  return loss_static_shared_bytes + loss_shared_bytes(mode, ld);
}

static_assert(loss_total_shared_bytes(LossMode::train, deterministic_classes) <=
                  default_shared_bytes,
              "loss_shared_bytes: the per-warp rows must fit in 48 KiB");
static_assert(loss_total_shared_bytes(LossMode::train, static_cast<int>(max_loss_classes)) <=
                  default_shared_bytes,
              "loss_shared_bytes: the widest shared row must fit in 48 KiB");

}  // namespace kernels
}  // namespace memopt::cuda_backend
