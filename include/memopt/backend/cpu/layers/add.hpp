#pragma once
// Add on the CPU: y = x + x2 in float; backward hands dy to both inputs, each times the
// derivative of its own activation below. Where one input's node also feeds another node (the
// residual's branch point), the executor sums the two gradients that reach it.

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/parallel_rows.hpp"
#include "memopt/layers/add.hpp"

namespace memopt::cpu_backend {

template <class Spec, std::size_t I>
struct LayerKernel<Add, Spec, I> {
  using T = typename Spec::compute_type;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  static constexpr std::size_t width = Spec::nodes[I].in.size();
  static_assert(I + 1 < Spec::depth, "Add: cannot be the model's last layer");

  void prepare(std::size_t) {}
  /// The float copy through which the second input's activation derivative is applied.
  std::size_t scratch_bytes(std::size_t rows) const {
    return narrow ? rows * width * sizeof(float) : 0;
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    parallel_rows(io.rows, width, [&](std::size_t begin, std::size_t end) {
      for (std::size_t v = begin * width; v < end * width; ++v)
        io.y[v] = Out(static_cast<float>(io.x[v]) + static_cast<float>(io.x2[v]));
    });
  }
  void input_grad(const BackwardIo<T>& io) {
    const std::size_t n = io.rows * width;
    if (io.dx) {
      std::copy_n(io.dy, n, io.dx);
      apply_activation_grad(io);
    }
    if (io.dx2) {
      BackwardIo<T> second = io;
      second.dx = io.dx2;
      second.below = io.below2;
      std::copy_n(io.dy, n, second.dx);
      apply_activation_grad(second);
    }
  }
};

}  // namespace memopt::cpu_backend
