#pragma once
// The end of a training step on the device: widen 16-bit bias gradients where cuBLASLt wrote
// them in the compute type, check every gradient for non-finite values and decide (loss
// scale, iteration count, optimizer coefficients), then update the parameters, their
// optimizer state and their 16-bit working copy in one pass.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "memopt/backend/cuda/control.hpp"
#include "memopt/backend/cuda/kernels/element.cuh"
#include "memopt/backend/cuda/kernels/grid_reduce.cuh"
#include "memopt/train/loss_scale.hpp"
#include "memopt/train/optimizers.hpp"

namespace memopt::cuda_backend::kernels {

/// Segments of 16-bit values to widen into float: `count` of them, each `length` values from
/// `source + from[i]` to `target + to[i]`. `N` bounds the count (the model's depth).
template <class T, std::size_t N>
struct WidenTable {
  const T* source = nullptr;
  float* target = nullptr;
  int count = 0;
  std::uint32_t from[N] = {};
  std::uint32_t to[N] = {};
  std::uint32_t length[N] = {};
};

/// One segment per blockIdx.y.
template <class T, std::size_t N>
__global__ void __launch_bounds__(block_threads) widen(const __grid_constant__ WidenTable<T, N> t) {
  const int s = static_cast<int>(blockIdx.y);
  if (s >= t.count) return;
  const std::uint32_t n = t.length[s];
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    t.target[t.to[s] + i] = to_float(t.source[t.from[s] + i]);
}

/// The optimizer's per-iteration coefficients, computed from the device's own iteration count
/// with the same rules as Adam::coefficients and SGD::coefficients (in double, like them).
__device__ inline void optimizer_coefficients(const TrainSettings& s, float* c) {
  if (s.optimizer == OptimizerKind::adam) {
    const double t = static_cast<double>(s.iterations + 1);
    const double alpha = s.learning_rate * sqrt(1.0 - pow(s.beta_2, t)) / (1.0 - pow(s.beta_1, t));
    c[0] = static_cast<float>(alpha);
    // 1 - beta in double, rounded once (Adam::Coefficients says why).
    c[1] = static_cast<float>(1.0 - s.beta_1);
    c[2] = static_cast<float>(1.0 - s.beta_2);
    c[3] = static_cast<float>(s.epsilon);
  } else {
    c[0] = static_cast<float>(s.learning_rate);
    c[1] = static_cast<float>(s.momentum);
    c[2] = s.nesterov ? 1.0f : 0.0f;
    c[3] = 0.0f;
  }
}

/// Reads every gradient (scaled by the loss scale) and flags any that is not finite once
/// unscaled. The last block then makes the step's decision exactly as the CPU backend does:
/// the loss scale's `update(finite)` says whether to apply the update; if so, the coefficients
/// of this iteration are stored and the iteration count advances, else the skip is counted.
/// `n` is a multiple of 4; `G` is float (a template only so that the kernel may live in a
/// header included by several translation units).
template <class G>
__global__ void __launch_bounds__(block_threads)
    check_gradients(const G* __restrict__ grads, std::size_t n, DeviceControl* control,
                    float* step_scalars) {
  static_assert(std::is_same_v<G, float>, "check_gradients: gradients are float32");
  const float inv = 1.0f / control->settings.scale;
  const float4* g4 = reinterpret_cast<const float4*>(grads);
  const std::size_t n4 = n / 4;
  bool bad = false;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 v = g4[i];
    bad = bad || !isfinite(v.x * inv) || !isfinite(v.y * inv) || !isfinite(v.z * inv) ||
          !isfinite(v.w * inv);
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) atomicOr(&control->reductions.nonfinite, 1u);
  if (!last_block_done(&control->reductions.check_ticket)) return;
  if (threadIdx.x != 0) return;

  TrainSettings& s = control->settings;
  StepDecision& d = control->step;
  const bool finite = atomicExch(&control->reductions.nonfinite, 0u) == 0u;
  d.inv_scale = inv;
  bool apply = false;
  if (s.dynamic_scale) {
    DynamicLossScale scale{s.scale, s.good_steps, s.growth_interval};
    apply = scale.update(finite);
    s.scale = scale.scale;
    s.good_steps = scale.good_steps;
  } else {
    NoLossScale scale;
    apply = scale.update(finite);
  }
  d.apply = apply ? 1 : 0;
  if (apply) {
    optimizer_coefficients(s, d.coefficients);
    ++s.iterations;
  } else {
    ++control->totals.skipped_steps;
  }
  if (step_scalars) step_scalars[2] = finite ? 1.0f : 0.0f;
}

/// Arguments of apply_update.
template <class T>
struct UpdateArgs {
  float* weights = nullptr;      // n float32 master weights
  const float* grads = nullptr;  // n gradients, scaled
  float* state = nullptr;        // slots x n optimizer state
  T* working = nullptr;          // n 16-bit copies (nullptr under float32)
  std::size_t n = 0;             // a multiple of 4
  const DeviceControl* control = nullptr;
};

/// One pass over all parameters: unscale the gradient, apply `Opt`'s rule (the same
/// `Opt::apply` the CPU backend runs), and write the 16-bit working copy. Does nothing when
/// the step's decision was to skip.
template <class Opt, class T>
__global__ void __launch_bounds__(block_threads) apply_update(UpdateArgs<T> a) {
  const StepDecision& d = a.control->step;
  if (!d.apply) return;
  const float inv = d.inv_scale;
  const std::size_t n4 = a.n / 4;
  float4* w4 = reinterpret_cast<float4*>(a.weights);
  const float4* g4 = reinterpret_cast<const float4*>(a.grads);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 w0 = w4[i];
    const float4 g = g4[i];
    float wv[4] = {w0.x, w0.y, w0.z, w0.w};
    const float gv[4] = {g.x * inv, g.y * inv, g.z * inv, g.w * inv};
    if constexpr (std::is_same_v<Opt, Adam>) {
      const Adam::Coefficients c{d.coefficients[0], d.coefficients[1], d.coefficients[2],
                                 d.coefficients[3]};
      float4* m4 = reinterpret_cast<float4*>(a.state);
      float4* v4 = reinterpret_cast<float4*>(a.state + a.n);
      const float4 m0 = m4[i], v0 = v4[i];
      float mv[4] = {m0.x, m0.y, m0.z, m0.w};
      float vv[4] = {v0.x, v0.y, v0.z, v0.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) Adam::apply(c, wv[e], gv[e], &mv[e], &vv[e]);
      m4[i] = make_float4(mv[0], mv[1], mv[2], mv[3]);
      v4[i] = make_float4(vv[0], vv[1], vv[2], vv[3]);
    } else {
      const SGD::Coefficients c{d.coefficients[0], d.coefficients[1], d.coefficients[2] != 0.0f};
      if (a.state) {
        float4* v4 = reinterpret_cast<float4*>(a.state);
        const float4 v0 = v4[i];
        float vv[4] = {v0.x, v0.y, v0.z, v0.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) SGD::apply(c, wv[e], gv[e], &vv[e]);
        v4[i] = make_float4(vv[0], vv[1], vv[2], vv[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) SGD::apply(c, wv[e], gv[e], nullptr);
      }
    }
    w4[i] = make_float4(wv[0], wv[1], wv[2], wv[3]);
    if constexpr (!std::is_same_v<T, float>) {
      if (a.working) {
#pragma unroll
        for (int e = 0; e < 4; ++e) a.working[4 * i + e] = from_float<T>(wv[e]);
      }
    }
  }
}

}  // namespace memopt::cuda_backend::kernels
