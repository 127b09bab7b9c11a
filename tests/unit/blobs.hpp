#pragma once
// Four Gaussian-like blobs in 8 dimensions: learnable, never all zero. Each class lifts the
// features c with c % 4 == label to `centre`; the others sit at -0.5; uniform noise of
// +-`noise` on every feature.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <memopt/core/random.hpp>
#include <memopt/data/dataset.hpp>

namespace memopt::testing {

inline data::Dataset blobs(std::size_t rows, std::uint64_t seed, float centre = 2.0f,
                           float noise = 1.0f) {
  Rng rng(seed);
  std::vector<float> x(rows * 8);
  std::vector<std::int32_t> y(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto label = static_cast<std::int32_t>(rng.below(4));
    y[r] = label;
    for (std::size_t c = 0; c < 8; ++c)
      x[r * 8 + c] =
          (c % 4 == static_cast<std::size_t>(label) ? centre : -0.5f) + rng.uniform(-noise, noise);
  }
  return data::from(std::move(x), std::move(y), 8);
}

// `blobs(rows, seed)` as 8x8 images (Input<8, 8, 1>): every row of a sample's image is its
// 8 features.
inline data::Dataset image_blobs(std::size_t rows, std::uint64_t seed) {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (const data::Sample& sample : blobs(rows, seed)) {
    for (int row = 0; row < 8; ++row)
      x.insert(x.end(), sample.features.begin(), sample.features.end());
    y.push_back(sample.label);
  }
  return data::from(std::move(x), std::move(y), 64);
}

}  // namespace memopt::testing
