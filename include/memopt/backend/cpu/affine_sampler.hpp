#pragma once
// The one sampler behind RandomTranslation, RandomZoom and RandomRotation on the CPU: each
// output pixel reads the input at an affine map of its coordinates, bilinear or nearest, with
// Keras's fill modes outside the image; and its transpose for the input gradient, which adds
// each output's gradient back into the pixels it read, with the same weights. The kernel of
// every such layer draws one map per image from the step's stream, in forward and again in
// the input gradient.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/parallel_rows.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/core/random.hpp"
#include "memopt/layers/affine_options.hpp"

namespace memopt::cpu_backend {

/// The index that an index `i` of an axis of `n` pixels reads under fill mode `Fill`, as Keras's
/// JAX and NumPy backends extend an image index by index: -1 for a point that reads the
/// constant fill value.
template <FillMode Fill>
constexpr std::int64_t fill_index(std::int64_t i, std::int64_t n) {
  if (i >= 0 && i < n) return i;
  if constexpr (Fill == FillMode::constant) {
    return -1;
  } else if constexpr (Fill == FillMode::nearest) {
    return i < 0 ? 0 : n - 1;
  } else if constexpr (Fill == FillMode::wrap) {
    const std::int64_t m = i % n;
    return m < 0 ? m + n : m;
  } else {  // reflect about the pixel edges, period 2n: d c b a | a b c d | d c b a
    std::int64_t m = i % (2 * n);
    if (m < 0) m += 2 * n;
    return m < n ? m : 2 * n - 1 - m;
  }
}

/// The one or two pixels of an axis of `n` that a coordinate `c` reads, and their weights.
struct AxisTaps {
  std::array<std::int64_t, 2> index{};
  std::array<float, 2> weight{};
  int count = 0;
};

template <Sampling S, FillMode Fill>
inline AxisTaps axis_taps(double c, std::int64_t n) {
  AxisTaps t;
  const double below = std::floor(c);
  const double frac = c - below;
  auto i = static_cast<std::int64_t>(below);
  if constexpr (S == Sampling::nearest) {
    if (frac > 0.5 || (frac == 0.5 && (i & 1) != 0)) ++i;  // halves to even
    t.index[0] = fill_index<Fill>(i, n);
    t.weight[0] = 1.0f;
    t.count = 1;
  } else {
    t.index[0] = fill_index<Fill>(i, n);
    t.weight[0] = static_cast<float>(1.0 - frac);
    t.count = 1;
    if (frac != 0.0) {  // on a pixel, the second weight is 0: skip it (and its fill)
      t.index[1] = fill_index<Fill>(i + 1, n);
      t.weight[1] = static_cast<float>(frac);
      t.count = 2;
    }
  }
  return t;
}

/// Calls `f(pixel_offset_or_minus_1, weight)` for each of the (at most four) input pixels that
/// output pixel (x, y) of an h x w image reads through `m`.
template <Sampling S, FillMode Fill, class F>
inline void for_each_tap(const AffineMap& m, std::size_t x, std::size_t y, std::size_t h,
                         std::size_t w, F&& f) {
  const auto dx = static_cast<double>(x), dy = static_cast<double>(y);
  const AxisTaps tx = axis_taps<S, Fill>(m.xx * dx + m.xy * dy + m.x0, std::int64_t(w));
  const AxisTaps ty = axis_taps<S, Fill>(m.yx * dx + m.yy * dy + m.y0, std::int64_t(h));
  for (int a = 0; a < ty.count; ++a)
    for (int b = 0; b < tx.count; ++b) {
      const bool inside = ty.index[a] >= 0 && tx.index[b] >= 0;
      f(inside ? ty.index[a] * std::int64_t(w) + tx.index[b] : std::int64_t{-1},
        ty.weight[a] * tx.weight[b]);
    }
}

/// y = S(x) for one h x w x c image: each output pixel the weighted sum of the pixels it reads
/// (`fill` for points outside, under the constant fill mode).
template <Sampling S, FillMode Fill, class In, class Out>
void affine_resample(const In* x, Out* y, std::size_t h, std::size_t w, std::size_t c,
                     const AffineMap& m, float fill) {
  for (std::size_t oy = 0; oy < h; ++oy)
    for (std::size_t ox = 0; ox < w; ++ox) {
      std::array<const In*, 4> src{};
      std::array<float, 4> weight{};
      int taps = 0;
      float constant = 0.0f;  // the fill's share, the same in every channel
      for_each_tap<S, Fill>(m, ox, oy, h, w, [&](std::int64_t p, float wt) {
        if (p < 0) {
          constant += wt * fill;
        } else {
          src[std::size_t(taps)] = x + std::size_t(p) * c;
          weight[std::size_t(taps++)] = wt;
        }
      });
      Out* out = y + (oy * w + ox) * c;
      for (std::size_t ch = 0; ch < c; ++ch) {
        float acc = constant;
        for (int k = 0; k < taps; ++k)
          acc += weight[std::size_t(k)] * static_cast<float>(src[std::size_t(k)][ch]);
        out[ch] = Out(acc);
      }
    }
}

/// dx += S^T dy for one image: the transpose of affine_resample's linear part (the fill is a
/// constant and has no gradient). `dx` must start at zero.
template <Sampling S, FillMode Fill, class G>
void affine_resample_transpose(const G* dy, float* dx, std::size_t h, std::size_t w, std::size_t c,
                               const AffineMap& m) {
  for (std::size_t oy = 0; oy < h; ++oy)
    for (std::size_t ox = 0; ox < w; ++ox) {
      const G* g = dy + (oy * w + ox) * c;
      for_each_tap<S, Fill>(m, ox, oy, h, w, [&](std::int64_t p, float wt) {
        if (p < 0) return;
        float* d = dx + std::size_t(p) * c;
        for (std::size_t ch = 0; ch < c; ++ch) d[ch] += wt * static_cast<float>(g[ch]);
      });
    }
}

/// The CPU kernel of a geometric augmentation layer `L` (RandomTranslation, RandomZoom,
/// RandomRotation) at node `I`: in training each image is resampled through its own draw of
/// L's transform; outside training the input is copied. The input gradient redraws the same
/// transforms from `io.seed` and applies their transpose.
template <class L, class Spec, std::size_t I>
struct AffineAugmentationKernel {
  using T = typename Spec::compute_type;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  static constexpr Shape shape = Spec::nodes[I].in;
  static constexpr std::size_t height = shape.dims[0], width = shape.dims[1],
                               channels = shape.dims[2], values = height * width * channels;
  static constexpr float fill = static_cast<float>(L::fill_value);
  static_assert(shape.rank == 3, "augmentation kernel: the layer's input must be an image");
  static_assert(I + 1 < Spec::depth,
                "augmentation layer: it cannot be the model's last layer; put it first, before "
                "the layers it augments the input of");

  void prepare(std::size_t) {}
  /// The float accumulator of the input gradient under 16-bit policies.
  std::size_t scratch_bytes(std::size_t rows) const {
    return narrow ? rows * values * sizeof(float) : 0;
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    if (!io.training) {  // evaluate, predict: the identity
      if constexpr (std::is_same_v<T, Out>)
        std::copy_n(io.x, io.rows * values, io.y);
      else
        convert(io.x, io.y, io.rows * values);
      return;
    }
    parallel_rows(io.rows, values, [&](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) {
        Rng rng = image_stream(io.seed, I, r);
        const AffineMap m = L::transform(draw_factors<L>(rng), height, width);
        affine_resample<L::sampling, L::fill_mode>(io.x + r * values, io.y + r * values, height,
                                                   width, channels, m, fill);
      }
    });
  }

  void input_grad(const BackwardIo<T>& io) {
    float* acc = nullptr;
    if constexpr (narrow)
      acc = io.scratch;
    else
      acc = io.dx;
    parallel_rows(io.rows, values, [&](std::size_t begin, std::size_t end) {
      std::fill(acc + begin * values, acc + end * values, 0.0f);
      for (std::size_t r = begin; r < end; ++r) {
        Rng rng = image_stream(io.seed, I, r);  // forward's draws for image r
        const AffineMap m = L::transform(draw_factors<L>(rng), height, width);
        affine_resample_transpose<L::sampling, L::fill_mode>(io.dy + r * values, acc + r * values,
                                                             height, width, channels, m);
      }
    });
    if constexpr (narrow) convert(acc, io.dx, io.rows * values);
    apply_activation_grad(io);
  }
};

}  // namespace memopt::cpu_backend
