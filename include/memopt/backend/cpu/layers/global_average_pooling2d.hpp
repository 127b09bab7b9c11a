#pragma once
// GlobalAveragePooling2D on the CPU: a mean per channel, accumulated in float.

#include <cstddef>

#include "memopt/backend/cpu/dnnl/global_average_pooling.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/layers/global_average_pooling2d.hpp"

namespace memopt::cpu_backend {

template <class Spec, std::size_t I>
struct LayerKernel<GlobalAveragePooling2D, Spec, I> {
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static_assert(I + 1 < Spec::depth,
                "GlobalAveragePooling2D: cannot be the model's last layer; end with Dense");

  void prepare(std::size_t) {}
  std::size_t scratch_bytes(std::size_t rows) const {
    return std::is_same_v<T, float> ? 0 : in.size() * rows * sizeof(float);
  }
  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    onednn::global_average_pooling_forward(io.x, io.y, io.rows, in.height(), in.width(),
                                           in.channels());
  }
  void input_grad(const BackwardIo<T>& io) {
    onednn::global_average_pooling_backward(io.dy, io.dx, io.rows, in.height(), in.width(),
                                            in.channels());
    apply_activation_grad(io);
  }
};

}  // namespace memopt::cpu_backend
