#pragma once
// RandomFlip on the CPU: each image copied row by row, its rows in reverse order for a
// vertical flip and its pixels in reverse order within a row for a horizontal one; the
// input gradient flips dy by the same draws (a flip is its own transpose). A copy outside
// training.

#include <algorithm>
#include <cstddef>

#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/parallel_rows.hpp"
#include "memopt/core/random.hpp"
#include "memopt/layers/random_flip.hpp"

namespace memopt::cpu_backend {

template <class Mode, class Spec, std::size_t I>
struct LayerKernel<RandomFlip<Mode>, Spec, I> {
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr std::size_t height = in.height(), width = in.width(), channels = in.channels();
  static constexpr std::size_t values = in.size();
  static_assert(I + 1 < Spec::depth, "RandomFlip: cannot be the model's last layer");

  struct Flips {
    bool horizontal = false, vertical = false;
  };
  /// Image `row`'s draws: Keras's one uniform per image and axis, kept when below 1/2.
  static Flips draw(std::uint64_t seed, std::size_t row) {
    Rng rng = image_stream(seed, I, row);
    Flips f;
    if constexpr (Mode::horizontal) f.horizontal = (rng.next() >> 63) != 0;
    if constexpr (Mode::vertical) f.vertical = (rng.next() >> 63) != 0;
    return f;
  }

  void prepare(std::size_t) {}
  std::size_t scratch_bytes(std::size_t) const { return 0; }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    if (!io.training) {
      std::copy_n(io.x, io.rows * values, io.y);
      return;
    }
    parallel_rows(io.rows, values, [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r)
        flip(io.x + r * values, io.y + r * values, draw(io.seed, r));
    });
  }
  void input_grad(const BackwardIo<T>& io) {
    parallel_rows(io.rows, values, [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r)
        flip(io.dy + r * values, io.dx + r * values, draw(io.seed, r));
    });
    apply_activation_grad(io);
  }

 private:
  template <class U>
  static void flip(const U* x, U* y, Flips f) {
    constexpr std::size_t line = width * channels;
    for (std::size_t h = 0; h < height; ++h) {
      const U* src = x + (f.vertical ? height - 1 - h : h) * line;
      U* dst = y + h * line;
      if (!f.horizontal) {
        std::copy_n(src, line, dst);
        continue;
      }
      for (std::size_t w = 0; w < width; ++w)
        std::copy_n(src + (width - 1 - w) * channels, channels, dst + w * channels);
    }
  }
};

}  // namespace memopt::cpu_backend
