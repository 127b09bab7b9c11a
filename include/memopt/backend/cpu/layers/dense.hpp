#pragma once
// Dense on the CPU: Eigen products in float, bias and activation in one pass over the result.

#include <algorithm>
#include <cstddef>

#include "memopt/backend/cpu/eigen.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/layers/dense.hpp"

namespace memopt::cpu_backend {

/// Dense's forward (z = x W + b, then f), weight gradient (dW = x^T dz, db = sum dz) and input
/// gradient (dx = dz W^T, times f' of the node below), for node `I` of `Spec`.
template <std::size_t Units, class Act, class Spec, std::size_t I>
struct LayerKernel<Dense<Units, Act>, Spec, I> {
  using T = typename Spec::compute_type;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  static constexpr std::size_t in_w = Spec::nodes[I].in.size();
  static constexpr std::size_t out_w = Units;
  static constexpr ActivationKind act = kernel_activation<Spec, I>(Act::kind);

  void prepare(std::size_t) {}
  /// Float scratch for 16-bit policies: two row slots and the kernel.
  static constexpr std::size_t scratch_bytes(std::size_t rows) {
    return narrow ? (2 * std::max(in_w, out_w) * rows + in_w * out_w) * sizeof(float) : 0;
  }

  // Slot k of the float scratch. Under float32 there is none (the scratch may be null, and
  // null + offset is undefined), and nothing reads it.
  static float* slot(float* scratch, std::size_t k, std::size_t rows) {
    return narrow ? scratch + k * std::max(in_w, out_w) * rows : nullptr;
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) const {
    const float* x = to_float(io.x, in_w * io.rows, io.scratch);
    const float* w = to_float(io.weights, in_w * out_w, slot(io.scratch, 2, io.rows));
    float* z =
        std::is_same_v<Out, float> ? reinterpret_cast<float*>(io.y) : slot(io.scratch, 1, io.rows);
    gemm_nn(w, x, z, out_w, in_w, io.rows);
    bias_activation_epilogue<act>(z, io.params + in_w * out_w, io.rows, out_w, out_w, io);
  }

  void weight_grad(const BackwardIo<T>& io) const {
    const float* dz = to_float(io.dy, out_w * io.rows, io.scratch);
    const float* x = to_float(io.x, in_w * io.rows, slot(io.scratch, 1, io.rows));
    gemm_nt(dz, x, io.grads, out_w, io.rows, in_w);
    float* db = io.grads + in_w * out_w;
    std::fill_n(db, out_w, 0.0f);
    for (std::size_t r = 0; r < io.rows; ++r)
      for (std::size_t u = 0; u < out_w; ++u) db[u] += dz[r * out_w + u];
  }

  void input_grad(const BackwardIo<T>& io) const {
    const float* dz = to_float(io.dy, out_w * io.rows, io.scratch);
    const float* w = to_float(io.weights, in_w * out_w, slot(io.scratch, 2, io.rows));
    float* da = narrow ? slot(io.scratch, 1, io.rows) : reinterpret_cast<float*>(io.dx);
    gemm_tn(w, dz, da, in_w, out_w, io.rows);
    io.below.apply(da, io.rows);  // in float, before the 16-bit store
    if constexpr (narrow) convert(da, io.dx, in_w * io.rows);
  }
};

}  // namespace memopt::cpu_backend
