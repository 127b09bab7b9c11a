#pragma once
// Helpers shared by the GPU tests: random data that is never all zero, relative errors in
// double, and the tolerance each policy is held to against the CPU backend.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include <memopt/memopt.hpp>

namespace memopt_test {

namespace mo = memopt;

/// Kernels uniform in Glorot's range, biases uniform in [-0.1, 0.1]: non-zero everywhere,
/// so that a bias the backend forgot to add shows.
template <class Spec>
std::vector<float> random_parameters(std::uint64_t seed) {
  std::vector<float> w(Spec::parameter_count);
  mo::Rng rng(seed);
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    const float limit = std::sqrt(6.0f / static_cast<float>(Spec::dims[i] + Spec::dims[i + 1]));
    float* k = w.data() + Spec::kernel_offset(i);
    for (std::size_t j = 0; j < Spec::kernel_size(i); ++j) k[j] = rng.uniform(-limit, limit);
    float* b = w.data() + Spec::bias_offset(i);
    for (std::size_t u = 0; u < Spec::dims[i + 1]; ++u) b[u] = rng.uniform(-0.1f, 0.1f);
  }
  return w;
}

/// `w` with every bias rounded to `T`: the CUDA executor adds hidden layers' biases from the
/// 16-bit working copy where the CPU backend adds the float32 master biases, a difference that
/// alone moves some bfloat16 gradients by a few percent. Tests that check other things remove
/// it this way.
template <class Spec>
void round_biases_to_compute_type(std::vector<float>& w) {
  using T = typename Spec::compute_type;
  for (std::size_t i = 0; i < Spec::depth; ++i)
    for (std::size_t u = 0; u < Spec::dims[i + 1]; ++u) {
      float& b = w[Spec::bias_offset(i) + u];
      b = static_cast<float>(T(b));
    }
}

inline std::vector<float> random_inputs(std::size_t rows, std::size_t width, std::uint64_t seed) {
  std::vector<float> x(rows * width);
  mo::Rng rng(seed);
  for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
  return x;
}

inline std::vector<std::int32_t> random_labels(std::size_t rows, std::size_t classes,
                                               std::uint64_t seed) {
  std::vector<std::int32_t> y(rows);
  mo::Rng rng(seed);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(classes));
  return y;
}

/// ||a - ref|| / ||ref||, in double.
inline double relative_error(std::span<const float> a, std::span<const float> ref) {
  double diff = 0, norm = 0;
  for (std::size_t j = 0; j < ref.size(); ++j) {
    const double d = static_cast<double>(a[j]) - static_cast<double>(ref[j]);
    diff += d * d;
    norm += static_cast<double>(ref[j]) * static_cast<double>(ref[j]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

/// What each policy is held to: float32 math on both sides, or 16-bit storage.
template <class Policy>
constexpr double tolerance = std::is_same_v<typename Policy::compute_type, float> ? 1e-5 : 1e-2;

template <class Policy>
using loss_scale_for =
    std::conditional_t<Policy::loss_scaling, mo::DynamicLossScale, mo::NoLossScale>;

}  // namespace memopt_test
