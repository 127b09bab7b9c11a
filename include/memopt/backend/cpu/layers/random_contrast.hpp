#pragma once
// RandomContrast on the CPU: per image, the channel means (in double), then
// y = clip((x - mean) * c + mean) with a bit per value for whether it was left unclipped,
// written only where the plan keeps it for backward. The input gradient redraws c:
//   dx_j = u_j c dy_j + (1 - c) / N * sum_i u_i dy_i   (over the N values of j's channel,
// u the unclipped bits), since every value of a channel moves its mean. A copy outside
// training.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/random.hpp"
#include "memopt/layers/random_contrast.hpp"

namespace memopt::cpu_backend {

template <class Factor, class... Options, class Spec, std::size_t I>
struct LayerKernel<RandomContrast<Factor, Options...>, Spec, I> {
  using L = RandomContrast<Factor, Options...>;
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr std::size_t channels = in.channels(), pixels = in.height() * in.width();
  static constexpr std::size_t values = in.size(), words = L::mask_words(values);
  static constexpr float low = static_cast<float>(L::low), high = static_cast<float>(L::high);
  static_assert(I + 1 < Spec::depth, "RandomContrast: cannot be the model's last layer");

  /// Image `row`'s contrast factor: Keras's one uniform draw per image.
  static float draw(std::uint64_t seed, std::size_t row) {
    Rng rng = image_stream(seed, I, row);
    return rng.uniform(static_cast<float>(1.0 - L::lower), static_cast<float>(1.0 + L::upper));
  }

  void prepare(std::size_t) {}
  std::size_t scratch_bytes(std::size_t) const { return 0; }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    if (!io.training) {
      std::copy_n(io.x, io.rows * values, io.y);
      return;
    }
    auto* kept = reinterpret_cast<std::uint64_t*>(io.saved[0]);
    for (std::size_t r = 0; r < io.rows; ++r) {
      const T* x = io.x + r * values;
      Out* y = io.y + r * values;
      const float c = draw(io.seed, r);
      const std::array<float, channels> mean = channel_means(x);
      std::uint64_t* bits = kept ? kept + r * words : nullptr;
      if (bits) std::fill_n(bits, words, std::uint64_t{0});
      for (std::size_t p = 0, j = 0; p < pixels; ++p) {
        for (std::size_t ch = 0; ch < channels; ++ch, ++j) {
          const float z = (static_cast<float>(x[j]) - mean[ch]) * c + mean[ch];
          y[j] = Out(std::clamp(z, low, high));
          if (bits && z >= low && z <= high) bits[j / 64] |= std::uint64_t{1} << (j % 64);
        }
      }
    }
  }
  void input_grad(const BackwardIo<T>& io) {
    const auto* kept = reinterpret_cast<const std::uint64_t*>(io.saved[0]);
    for (std::size_t r = 0; r < io.rows; ++r) {
      const T* dy = io.dy + r * values;
      T* dx = io.dx + r * values;
      const std::uint64_t* bits = kept + r * words;
      const auto unclipped = [&](std::size_t j) { return (bits[j / 64] >> (j % 64)) & 1u; };
      const float c = draw(io.seed, r);
      std::array<double, channels> through{};  // sum of u_i dy_i per channel
      for (std::size_t p = 0, j = 0; p < pixels; ++p)
        for (std::size_t ch = 0; ch < channels; ++ch, ++j)
          if (unclipped(j)) through[ch] += static_cast<double>(dy[j]);
      std::array<float, channels> shared{};
      for (std::size_t ch = 0; ch < channels; ++ch)
        shared[ch] = static_cast<float>((1.0 - c) * through[ch] / static_cast<double>(pixels));
      for (std::size_t p = 0, j = 0; p < pixels; ++p)
        for (std::size_t ch = 0; ch < channels; ++ch, ++j)
          dx[j] = T((unclipped(j) ? c * static_cast<float>(dy[j]) : 0.0f) + shared[ch]);
    }
    apply_activation_grad(io);
  }

 private:
  static std::array<float, channels> channel_means(const T* x) {
    std::array<double, channels> sum{};
    for (std::size_t p = 0, j = 0; p < pixels; ++p)
      for (std::size_t ch = 0; ch < channels; ++ch, ++j) sum[ch] += static_cast<double>(x[j]);
    std::array<float, channels> mean{};
    for (std::size_t ch = 0; ch < channels; ++ch)
      mean[ch] = static_cast<float>(sum[ch] / static_cast<double>(pixels));
    return mean;
  }
};

}  // namespace memopt::cpu_backend
