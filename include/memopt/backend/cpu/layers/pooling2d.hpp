#pragma once
// MaxPooling2D and AveragePooling2D on the CPU. Max pooling keeps its argmax in the layer's
// saved buffer between forward and backward.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "memopt/backend/cpu/dnnl/pool2d.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/max_pool2d.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/per_batch.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/layers/pooling2d.hpp"

namespace memopt::cpu_backend {

namespace detail {

// The window of pooling layer `L` over node `I`'s input.
template <class L, class Spec, std::size_t I>
struct PoolingWindow {
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr Shape out = Spec::nodes[I].out;
  static_assert(I + 1 < Spec::depth,
                "Pooling2D: cannot be the model's last layer; end with Flatten and Dense");
};

}  // namespace detail

/// MaxPooling2D: memopt's own NHWC kernel (max_pool2d.hpp says why), argmax in the layer's
/// saved buffer.
template <auto P, class... Os, class Spec, std::size_t I>
struct LayerKernel<MaxPooling2D<P, Os...>, Spec, I>
    : detail::PoolingWindow<MaxPooling2D<P, Os...>, Spec, I> {
  using L = MaxPooling2D<P, Os...>;
  using base = detail::PoolingWindow<L, Spec, I>;
  using base::in;
  using typename base::T;
  static constexpr MaxPool2dShape shape{in.height(), in.width(),   in.channels(), L::pool.h,
                                        L::pool.w,   L::strides.h, L::strides.w,  L::padding};

  // The activation of the node below, whose derivative the input gradient applies.
  static constexpr ActivationKind below = Spec::input_activation(I);
  // Tiling windows over a linear or ReLU output run the compile-time kernels, which carry
  // ReLU's derivative in the argmax (tiled_max_pool2d_forward says how); the layer's `tiles`
  // also tells the planner to keep no ReLU mask below it.
  static constexpr bool tiled =
      L::tiles && (below == ActivationKind::linear || below == ActivationKind::relu);

  void prepare(std::size_t) {}
  // The general gradient is built in float, then stored in 16 bits.
  std::size_t scratch_bytes(std::size_t rows) const {
    return tiled || std::is_same_v<T, float> ? 0 : in.size() * rows * sizeof(float);
  }
  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    auto* argmax = reinterpret_cast<std::uint8_t*>(io.saved[0]);
    if constexpr (tiled)
      tiled_max_pool2d_forward<shape, below == ActivationKind::relu>(io.rows, io.x, io.y, argmax);
    else
      max_pool2d_forward(shape, io.rows, io.x, io.y, argmax);
  }
  void input_grad(const BackwardIo<T>& io) {
    const auto* argmax = reinterpret_cast<const std::uint8_t*>(io.saved[0]);
    if constexpr (tiled) {
      tiled_max_pool2d_backward<shape>(io.rows, io.dy, argmax, io.dx);
      return;
    }
    float* dx = std::is_same_v<T, float> ? reinterpret_cast<float*>(io.dx) : io.scratch;
    max_pool2d_backward(shape, io.rows, io.dy, argmax, dx);
    io.below.apply(dx, io.rows);  // in float, before a 16-bit store
    if constexpr (!std::is_same_v<T, float>) convert(dx, io.dx, in.size() * io.rows);
  }
};

/// AveragePooling2D: oneDNN's pooling (TensorFlow's border rule: padding is not counted).
template <auto P, class... Os, class Spec, std::size_t I>
struct LayerKernel<AveragePooling2D<P, Os...>, Spec, I>
    : detail::PoolingWindow<AveragePooling2D<P, Os...>, Spec, I> {
  using L = AveragePooling2D<P, Os...>;
  using base = detail::PoolingWindow<L, Spec, I>;
  using base::in;
  using typename base::T;

  static onednn::Pool2dShape shape(std::size_t rows) {
    return {.batch = static_cast<std::int64_t>(rows),
            .height = static_cast<std::int64_t>(in.height()),
            .width = static_cast<std::int64_t>(in.width()),
            .channels = static_cast<std::int64_t>(in.channels()),
            .pool_h = static_cast<std::int64_t>(L::pool.h),
            .pool_w = static_cast<std::int64_t>(L::pool.w),
            .stride_h = static_cast<std::int64_t>(L::strides.h),
            .stride_w = static_cast<std::int64_t>(L::strides.w),
            .padding = L::padding,
            .kind = onednn::PoolKind::average};
  }
  void prepare(std::size_t rows) {
    pool_.select(rows, [](std::size_t r) { return onednn::Pool2d<T>(shape(r)); });
  }
  std::size_t scratch_bytes(std::size_t) const { return pool_->scratchpad_bytes(); }
  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    pool_->forward_inference(io.x, io.y, io.scratch);
  }
  void input_grad(const BackwardIo<T>& io) {
    pool_->backward(io.dy, nullptr, io.dx, io.scratch);
    apply_activation_grad(io);
  }

 private:
  PerBatch<onednn::Pool2d<T>> pool_;
};

}  // namespace memopt::cpu_backend
