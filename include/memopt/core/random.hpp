#pragma once
// A small, fully specified random generator, so that a seed gives the same weights and the
// same shuffles on every platform (std:: distributions are implementation-defined).

#include <cstddef>
#include <cstdint>

namespace memopt {

/// SplitMix64: 64-bit state, passes BigCrush, trivially seedable.
///
/// ```cpp
/// mo::Rng rng{42};
/// float u = rng.uniform(-1.0f, 1.0f);
/// ```
class Rng {
 public:
  constexpr explicit Rng(std::uint64_t seed = 0) : state_(seed) {}

  constexpr std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  /// Uniform in [lo, hi), from the top 24 bits so every value is exact in float.
  constexpr float uniform(float lo, float hi) {
    const float u = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
  }

  /// Uniform integer in [0, n), unbiased: draws below 2^64 mod n are rejected.
  constexpr std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;
    std::uint64_t x = next();
    while (x < threshold) x = next();
    return x % n;
  }

 private:
  std::uint64_t state_;
};

/// The stream of one image's draws in a random layer's forward (and, redrawn, its backward):
/// keyed by the step's stream, the layer's node and the image's row, so that each image
/// draws independently of how many rows a call covers, and the same step draws the same.
constexpr Rng image_stream(std::uint64_t step_seed, std::size_t node, std::size_t row) {
  Rng mix(step_seed ^ (0x9e3779b97f4a7c15ull * (node + 1)));
  return Rng(mix.next() ^ (0xd1b54a32d192ed03ull * (row + 1)));
}

}  // namespace memopt
