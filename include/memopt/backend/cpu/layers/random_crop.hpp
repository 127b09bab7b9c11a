#pragma once
// RandomCrop on the CPU: in fit each image's window copied row by row, one window per batch
// drawn from the step's stream; the input gradient writes dy into the redrawn window and zero
// around it. In evaluate and predict the centred window, resized bilinearly where it is
// larger than the crop.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/random.hpp"
#include "memopt/layers/random_crop.hpp"

namespace memopt::cpu_backend {

/// Where output index `o` of an axis resized from `n` to `m` pixels reads, as TensorFlow's
/// and JAX's bilinear resize with half-pixel centres: between pixels `lo` and `hi`, weight
/// `frac` on `hi`. Only shrinking (n >= m) happens here, so the point never leaves the axis.
struct ResizeTap {
  std::size_t lo = 0, hi = 0;
  float frac = 0.0f;
};
inline ResizeTap resize_tap(std::size_t o, std::size_t n, std::size_t m) {
  const double c =
      (static_cast<double>(o) + 0.5) * static_cast<double>(n) / static_cast<double>(m) - 0.5;
  const double below = std::floor(c);
  ResizeTap t;
  t.lo = static_cast<std::size_t>(std::max(below, 0.0));
  t.hi = std::min(t.lo + 1, n - 1);
  t.frac = static_cast<float>(c - below);
  return t;
}

template <std::size_t Height, std::size_t Width, class Spec, std::size_t I>
struct LayerKernel<RandomCrop<Height, Width>, Spec, I> {
  using L = RandomCrop<Height, Width>;
  using Window = typename L::Window;
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr std::size_t in_height = in.height(), in_width = in.width(),
                               channels = in.channels();
  static constexpr std::size_t in_values = in.size(), out_values = Height * Width * channels;
  static constexpr Window centred = L::centred_window(in_height, in_width);
  static constexpr bool resized = centred.height != Height || centred.width != Width;
  static_assert(I + 1 < Spec::depth, "RandomCrop: cannot be the model's last layer");
  // fit's windows are the crop's size: drawn, or centred where an axis is the crop's.
  static_assert(L::random_in_training(in_height, in_width) || !resized);

  /// This step's window in `fit`: one per batch, from the stream of the batch's first image.
  static Window draw(std::uint64_t seed) {
    Rng rng = image_stream(seed, I, 0);
    return L::training_window(rng, in_height, in_width);
  }

  void prepare(std::size_t) {}
  std::size_t scratch_bytes(std::size_t) const { return 0; }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    if (io.training || !resized) {
      const Window w = io.training ? draw(io.seed) : centred;
      for (std::size_t r = 0; r < io.rows; ++r)
        crop(io.x + r * in_values, io.y + r * out_values, w);
      return;
    }
    for (std::size_t r = 0; r < io.rows; ++r)
      centred_resize(io.x + r * in_values, io.y + r * out_values);
  }

  void input_grad(const BackwardIo<T>& io) {
    const Window w = draw(io.seed);
    constexpr std::size_t line = Width * channels;
    std::fill_n(io.dx, io.rows * in_values, T(0.0f));
    for (std::size_t r = 0; r < io.rows; ++r) {
      const T* dy = io.dy + r * out_values;
      T* dx = io.dx + r * in_values;
      for (std::size_t y = 0; y < Height; ++y)
        std::copy_n(dy + y * line, line, dx + ((w.top + y) * in_width + w.left) * channels);
    }
    apply_activation_grad(io);
  }

 private:
  template <class U>
  static void crop(const T* x, U* y, const Window& w) {
    constexpr std::size_t line = Width * channels;
    for (std::size_t h = 0; h < Height; ++h) {
      const T* src = x + ((w.top + h) * in_width + w.left) * channels;
      std::transform(src, src + line, y + h * line, [](T v) { return U(v); });
    }
  }

  // Keras's inference resize of the centred window: per axis the two pixels around each
  // output's half-pixel centre, weighted.
  template <class U>
  static void centred_resize(const T* x, U* y) {
    std::array<ResizeTap, Height> rows{};
    std::array<ResizeTap, Width> cols{};
    for (std::size_t o = 0; o < Height; ++o) rows[o] = resize_tap(o, centred.height, Height);
    for (std::size_t o = 0; o < Width; ++o) cols[o] = resize_tap(o, centred.width, Width);
    const auto at = [&](std::size_t v, std::size_t u, std::size_t c) {
      return static_cast<float>(
          x[((centred.top + v) * in_width + centred.left + u) * channels + c]);
    };
    for (std::size_t oy = 0; oy < Height; ++oy) {
      const ResizeTap ty = rows[oy];
      for (std::size_t ox = 0; ox < Width; ++ox) {
        const ResizeTap tx = cols[ox];
        U* out = y + (oy * Width + ox) * channels;
        for (std::size_t c = 0; c < channels; ++c) {
          const float top =
              at(ty.lo, tx.lo, c) + tx.frac * (at(ty.lo, tx.hi, c) - at(ty.lo, tx.lo, c));
          const float bottom =
              at(ty.hi, tx.lo, c) + tx.frac * (at(ty.hi, tx.hi, c) - at(ty.hi, tx.lo, c));
          out[c] = U(top + ty.frac * (bottom - top));
        }
      }
    }
  }
};

}  // namespace memopt::cpu_backend
