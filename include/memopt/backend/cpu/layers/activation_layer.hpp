#pragma once
// Activation<Act> on the CPU: forward copies x into y and applies f there (keeping ReLU's
// mask or GELU's z as the plan asks); the input gradient passes dy through, times the
// derivative of the activation below. Its own derivative is applied by the node above (or,
// for the last node, by the loss head), as for every layer's activation.

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/layers/activation_layer.hpp"

namespace memopt::cpu_backend {

template <class Act, class Spec, std::size_t I>
struct LayerKernel<Activation<Act>, Spec, I> {
  using T = typename Spec::compute_type;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  static constexpr std::size_t width = Spec::nodes[I].in.size();
  static constexpr ActivationKind act = kernel_activation<Spec, I>(Act::kind);

  void prepare(std::size_t) {}
  /// The float copy that f passes through under 16-bit policies.
  std::size_t scratch_bytes(std::size_t rows) const {
    return narrow && act != ActivationKind::linear ? rows * width * sizeof(float) : 0;
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    const std::size_t n = io.rows * width;
    if constexpr (act == ActivationKind::linear) {  // the last node: the loss head applies f
      copy(io.x, io.y, n);
    } else if constexpr (!narrow) {
      copy(io.x, io.y, n);
      bias_activation_epilogue<act>(io.y, nullptr, io.rows, width, width, io);
    } else {
      convert(io.x, io.scratch, n);
      bias_activation_epilogue<act>(io.scratch, nullptr, io.rows, width, width, io);
    }
  }
  void input_grad(const BackwardIo<T>& io) {
    copy(io.dy, io.dx, io.rows * width);
    apply_activation_grad(io);
  }

 private:
  template <class From, class To>
  static void copy(const From* src, To* dst, std::size_t n) {
    if constexpr (std::is_same_v<From, To>) {
      if (static_cast<const void*>(src) != static_cast<const void*>(dst)) std::copy_n(src, n, dst);
    } else {
      convert(src, dst, n);
    }
  }
};

}  // namespace memopt::cpu_backend
