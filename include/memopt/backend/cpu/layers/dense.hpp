#pragma once
// Dense on the CPU: oneDNN matmuls in float, bias and activation in one pass over the result.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/backend/cpu/dnnl/matmul.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/per_batch.hpp"
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

  void prepare(std::size_t rows) {
    using onednn::Matmul;
    forward_.select(rows, [](std::size_t r) {  // x [rows, in] W [in, out]
      return Matmul({.m = dim(r), .k = dim(in_w), .n = dim(out_w)});
    });
    weight_grad_.select(rows, [](std::size_t r) {  // x^T [in, rows] dz [rows, out]
      return Matmul({.m = dim(in_w), .k = dim(r), .n = dim(out_w), .transpose_a = true});
    });
    input_grad_.select(rows, [](std::size_t r) {  // dz [rows, out] W^T [out, in]
      return Matmul({.m = dim(r), .k = dim(out_w), .n = dim(in_w), .transpose_b = true});
    });
  }
  /// The matmuls' scratchpad, after the float copies that 16-bit policies need: two row slots
  /// and the kernel.
  std::size_t scratch_bytes(std::size_t rows) const {
    return matmul_at(rows) +
           std::max({forward_->scratchpad_bytes(), weight_grad_->scratchpad_bytes(),
                     input_grad_->scratchpad_bytes()});
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) const {
    const float* x = to_float(io.x, in_w * io.rows, io.scratch);
    const float* w = to_float(io.weights, in_w * out_w, slot(io.scratch, 2, io.rows));
    float* z =
        std::is_same_v<Out, float> ? reinterpret_cast<float*>(io.y) : slot(io.scratch, 1, io.rows);
    forward_->run(x, w, z, matmul_scratch(io.scratch, io.rows));
    bias_activation_epilogue<act>(z, io.params + in_w * out_w, io.rows, out_w, out_w, io);
  }

  void weight_grad(const BackwardIo<T>& io) const {
    const float* dz = to_float(io.dy, out_w * io.rows, io.scratch);
    const float* x = to_float(io.x, in_w * io.rows, slot(io.scratch, 1, io.rows));
    weight_grad_->run(x, dz, io.grads, matmul_scratch(io.scratch, io.rows));
    float* db = io.grads + in_w * out_w;
    std::fill_n(db, out_w, 0.0f);
    for (std::size_t r = 0; r < io.rows; ++r)
      for (std::size_t u = 0; u < out_w; ++u) db[u] += dz[r * out_w + u];
  }

  void input_grad(const BackwardIo<T>& io) const {
    const float* dz = to_float(io.dy, out_w * io.rows, io.scratch);
    const float* w = to_float(io.weights, in_w * out_w, slot(io.scratch, 2, io.rows));
    float* da = narrow ? slot(io.scratch, 1, io.rows) : reinterpret_cast<float*>(io.dx);
    input_grad_->run(dz, w, da, matmul_scratch(io.scratch, io.rows));
    io.below.apply(da, io.rows);  // in float, before the 16-bit store
    if constexpr (narrow) convert(da, io.dx, in_w * io.rows);
  }

 private:
  static constexpr std::int64_t dim(std::size_t n) { return static_cast<std::int64_t>(n); }
  // Slot k of the float copies. Under float32 there are none (the scratch may be null, and
  // null + offset is undefined), and nothing reads them.
  static float* slot(float* scratch, std::size_t k, std::size_t rows) {
    return narrow ? scratch + k * std::max(in_w, out_w) * rows : nullptr;
  }
  static constexpr std::size_t matmul_at(std::size_t rows) {
    return narrow ? onednn::detail::align_up((2 * std::max(in_w, out_w) * rows + in_w * out_w) *
                                             sizeof(float))
                  : 0;
  }
  static void* matmul_scratch(float* scratch, std::size_t rows) {
    return narrow ? static_cast<void*>(reinterpret_cast<std::byte*>(scratch) + matmul_at(rows))
                  : scratch;
  }

  PerBatch<onednn::Matmul> forward_, weight_grad_, input_grad_;
};

}  // namespace memopt::cpu_backend
