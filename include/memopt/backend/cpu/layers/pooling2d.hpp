#pragma once
// MaxPooling2D and AveragePooling2D on the CPU: oneDNN's pooling primitives; max pooling keeps
// its argmax in the layer's saved buffer between forward and backward.

#include <cstddef>
#include <cstdint>
#include <string>

#include "memopt/backend/cpu/dnnl/pool2d.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/per_batch.hpp"
#include "memopt/core/error.hpp"
#include "memopt/layers/pooling2d.hpp"

namespace memopt::cpu_backend {

namespace detail {

template <class L, class Spec, std::size_t I>
struct Pooling2DKernel {
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr Shape out = Spec::nodes[I].out;
  static constexpr bool is_max = L::kind == PoolingKind::max;
  static_assert(I + 1 < Spec::depth,
                "Pooling2D: cannot be the model's last layer; end with Flatten and Dense");

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
            .kind = is_max ? onednn::PoolKind::max : onednn::PoolKind::average};
  }

  void prepare(std::size_t rows) {
    auto& pool = pool_.select(rows, [](std::size_t r) { return onednn::Pool2d<T>(shape(r)); });
    // The plan sized the argmax from the layer's declaration: a byte per output value.
    if constexpr (is_max) {
      const std::size_t planned = L::saved(in)[0].per_sample * rows;
      if (pool.workspace_bytes() > planned)
        throw error("MaxPooling2D: oneDNN asks for a " + std::to_string(pool.workspace_bytes()) +
                    "-byte argmax workspace where the plan holds " + std::to_string(planned));
    }
  }
  std::size_t scratch_bytes(std::size_t) const { return pool_->scratchpad_bytes(); }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    if (is_max && io.saved[0])
      pool_->forward(io.x, io.y, io.saved[0], io.scratch);
    else
      pool_->forward_inference(io.x, io.y, io.scratch);
  }
  void input_grad(const BackwardIo<T>& io) {
    pool_->backward(io.dy, io.saved[0], io.dx, io.scratch);
    apply_activation_grad(io);
  }

 private:
  PerBatch<onednn::Pool2d<T>> pool_;
};

}  // namespace detail

template <auto P, auto S, Padding Pad, class Spec, std::size_t I>
struct LayerKernel<MaxPooling2D<P, S, Pad>, Spec, I>
    : detail::Pooling2DKernel<MaxPooling2D<P, S, Pad>, Spec, I> {};

template <auto P, auto S, Padding Pad, class Spec, std::size_t I>
struct LayerKernel<AveragePooling2D<P, S, Pad>, Spec, I>
    : detail::Pooling2DKernel<AveragePooling2D<P, S, Pad>, Spec, I> {};

}  // namespace memopt::cpu_backend
