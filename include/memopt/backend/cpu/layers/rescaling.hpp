#pragma once
// Rescaling on the CPU: y = x * scale + offset in one pass.

#include <cstddef>

#include "memopt/backend/cpu/dnnl/rescaling.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/layers/rescaling.hpp"

namespace memopt::cpu_backend {

template <class Scale, class Offset, class Spec, std::size_t I>
struct LayerKernel<Rescaling<Scale, Offset>, Spec, I> {
  using L = Rescaling<Scale, Offset>;
  using T = typename Spec::compute_type;
  static constexpr std::size_t width = Spec::nodes[I].in.size();
  static_assert(I + 1 < Spec::depth, "Rescaling: cannot be the model's last layer");

  void prepare(std::size_t) {}
  std::size_t scratch_bytes(std::size_t) const { return 0; }
  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    onednn::rescaling_forward(io.x, io.y, io.rows * width, static_cast<float>(L::scale),
                              static_cast<float>(L::offset));
  }
  void input_grad(const BackwardIo<T>& io) {
    onednn::rescaling_backward(io.dy, io.dx, io.rows * width, static_cast<float>(L::scale));
    apply_activation_grad(io);
  }
};

}  // namespace memopt::cpu_backend
