#pragma once
// Dropout on the CPU: keep bits drawn from the step's random stream, 1 bit per value kept
// for backward; a copy outside training.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/dropout.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/random.hpp"
#include "memopt/layers/dropout.hpp"

namespace memopt::cpu_backend {

template <class Rate, class Spec, std::size_t I>
struct LayerKernel<Dropout<Rate>, Spec, I> {
  using L = Dropout<Rate>;
  using T = typename Spec::compute_type;
  static constexpr std::size_t width = Spec::nodes[I].in.size();
  static constexpr float rate = static_cast<float>(L::rate);
  static_assert(I + 1 < Spec::depth, "Dropout: cannot be the model's last layer");

  void prepare(std::size_t) {}
  /// The keep bits when the plan keeps none (no backward reads them).
  std::size_t scratch_bytes(std::size_t rows) const {
    return onednn::dropout_mask_words(rows * width) * sizeof(std::uint64_t);
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    const std::size_t n = io.rows * width;
    if (!io.training) {
      std::copy_n(io.x, n, io.y);
      return;
    }
    // One stream per node and step: the same seed and step number draw the same mask.
    Rng rng(io.seed ^ (0x9e3779b97f4a7c15ull * (I + 1)));
    auto* mask = reinterpret_cast<std::uint64_t*>(
        io.saved[0] ? io.saved[0] : reinterpret_cast<std::byte*>(io.scratch));
    onednn::dropout_forward(io.x, io.y, mask, n, rate, rng);
  }
  void input_grad(const BackwardIo<T>& io) {
    onednn::dropout_backward(io.dy, reinterpret_cast<const std::uint64_t*>(io.saved[0]), io.dx,
                             io.rows * width, rate);
    apply_activation_grad(io);
  }
};

}  // namespace memopt::cpu_backend
