#pragma once
// softmax_cross_entropy: softmax, sparse categorical cross-entropy, its gradient, the last
// layer's bias gradient and the correct-prediction count, in one kernel, float32 math.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cuda/control.hpp"
#include "memopt/backend/cuda/kernels/element.cuh"
#include "memopt/backend/cuda/kernels/grid_reduce.cuh"
#include "memopt/backend/cuda/launch_limits.hpp"

namespace memopt::cuda_backend::kernels {

/// Arguments of softmax_cross_entropy (one struct: the launch reads better, and graph
/// capture copies it by value).
template <class G>
struct LossArgs {
  LossMode mode = LossMode::evaluate;
  float* logits = nullptr;  // rows x ld float32, sample after sample; p in place (probabilities)
  G* grad = nullptr;        // rows x ld: dL/dz in G (may be `logits` itself under float32)
  const std::int32_t* labels = nullptr;
  int rows = 0, k = 0, ld = 0;       // k classes, padded to ld
  float* bias_grad = nullptr;        // ld floats: sum over rows of dL/dz (train)
  float* partial_bias = nullptr;     // max_reduce_blocks x ld floats of scratch (train)
  double* partial_sums = nullptr;    // max_reduce_blocks x 2 doubles of scratch
  DeviceControl* control = nullptr;  // loss scale in; totals out
  float* step_scalars = nullptr;     // this step's loss sum and correct count (train)
};

/// One warp per row, lanes over classes. The gradient is scale/rows * (p - onehot(y)), as the
/// CPU backend computes it; rows whose label is outside [0, k) count as errors, which the host
/// reports, and get no loss and no gradient. Per-block partial sums are added up by the last
/// block in a fixed order, so results do not depend on scheduling. Shared memory: see
/// loss_shared_bytes (launch_limits.hpp); every width stays within the default 48 KiB.
template <class G>
__global__ void __launch_bounds__(block_threads) softmax_cross_entropy(LossArgs<G> a) {
  extern __shared__ float s_bias[];  // train mode: per warp (or one shared row), a.ld floats
  __shared__ double s_loss[block_threads / 32];
  __shared__ double s_correct[block_threads / 32];
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int warps = static_cast<int>(blockDim.x >> 5);
  const bool train = a.mode == LossMode::train;
  const bool per_warp = a.ld <= deterministic_classes;
  const int bias_rows = per_warp ? warps : 1;
  float* my_bias = s_bias + (per_warp ? warp * a.ld : 0);
  if (train)
    for (int u = static_cast<int>(threadIdx.x); u < a.ld * bias_rows;
         u += static_cast<int>(blockDim.x))
      s_bias[u] = 0.0f;
  __syncthreads();

  const float coefficient = train ? a.control->settings.scale / static_cast<float>(a.rows) : 0.0f;
  double loss = 0.0, correct = 0.0;  // this warp's, in lane 0
  for (int r = static_cast<int>(blockIdx.x) * warps + warp; r < a.rows;
       r += static_cast<int>(gridDim.x) * warps) {
    float* z = a.logits + static_cast<std::size_t>(r) * static_cast<std::size_t>(a.ld);
    // The first largest value and its index (std::max_element's choice on ties).
    float best = -INFINITY;
    int best_u = a.k;
    for (int u = lane; u < a.k; u += 32) {
      const float v = z[u];
      if (v > best || best_u == a.k) {
        best = v;
        best_u = u;
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, offset);
      const int ou = __shfl_xor_sync(0xffffffffu, best_u, offset);
      if (ob > best || (ob == best && ou < best_u) || (best_u == a.k && ou < a.k)) {
        best = ob;
        best_u = ou;
      }
    }
    float sum = 0.0f;
    for (int u = lane; u < a.k; u += 32) sum += expf(z[u] - best);
    sum = warp_sum(sum);
    const int y = a.labels ? a.labels[r] : 0;
    const bool valid = y >= 0 && y < a.k;
    const float zy = valid ? z[y] : 0.0f;
    __syncwarp();  // every lane has read z before any lane overwrites it below
    if (lane == 0 && a.mode != LossMode::probabilities) {
      if (valid) {
        loss += static_cast<double>(logf(sum) + best - zy);
        correct += best_u == y ? 1.0 : 0.0;
      } else {
        atomicAdd(&a.control->totals.label_errors, 1u);
      }
    }
    const float inv = 1.0f / sum;
    if (train) {
      G* g = a.grad + static_cast<std::size_t>(r) * static_cast<std::size_t>(a.ld);
      for (int u = lane; u < a.ld; u += 32) {
        float gu = 0.0f;
        if (u < a.k && valid) gu = coefficient * (expf(z[u] - best) * inv - (u == y ? 1.0f : 0.0f));
        const G stored = from_float<G>(gu);
        g[u] = stored;
        // The value backward reads, as on the CPU. Each lane owns its u within its warp's row.
        if (per_warp)
          my_bias[u] += to_float(stored);
        else
          atomicAdd(&my_bias[u], to_float(stored));
      }
    } else if (a.mode == LossMode::probabilities) {
      for (int u = lane; u < a.k; u += 32) z[u] = expf(z[u] - best) * inv;
    }
  }

  if (lane == 0) {
    s_loss[warp] = loss;
    s_correct[warp] = correct;
  }
  __syncthreads();
  double* partial = a.partial_sums + 2 * static_cast<std::size_t>(blockIdx.x);
  if (threadIdx.x == 0) {
    double l = 0.0, c = 0.0;
    for (int w = 0; w < warps; ++w) {
      l += s_loss[w];
      c += s_correct[w];
    }
    partial[0] = l;
    partial[1] = c;
  }
  if (train)
    for (int u = static_cast<int>(threadIdx.x); u < a.ld; u += static_cast<int>(blockDim.x)) {
      float sum = 0.0f;
      for (int w = 0; w < bias_rows; ++w) sum += s_bias[w * a.ld + u];
      a.partial_bias[static_cast<std::size_t>(blockIdx.x) * a.ld + u] = sum;
    }

  if (!last_block_done(&a.control->reductions.reduce_ticket)) return;
  const int blocks = static_cast<int>(gridDim.x);
  if (train) {
    for (int u = static_cast<int>(threadIdx.x); u < a.ld; u += static_cast<int>(blockDim.x)) {
      float s = 0.0f;
      for (int b = 0; b < blocks; ++b)
        s += __ldcg(a.partial_bias + static_cast<std::size_t>(b) * a.ld + u);
      a.bias_grad[u] = s;
    }
  }
  if (threadIdx.x == 0 && a.mode != LossMode::probabilities) {
    double l = 0.0, c = 0.0;
    for (int b = 0; b < blocks; ++b) {
      l += __ldcg(a.partial_sums + 2 * b);
      c += __ldcg(a.partial_sums + 2 * b + 1);
    }
    a.control->totals.loss_sum += l;
    a.control->totals.correct += c;
    if (train && a.step_scalars) {
      a.step_scalars[0] = static_cast<float>(l);
      a.step_scalars[1] = static_cast<float>(c);
    }
  }
}

}  // namespace memopt::cuda_backend::kernels
