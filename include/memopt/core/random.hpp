#pragma once
// A small, fully specified random generator, so that a seed gives the same weights and the
// same shuffles on every platform (std:: distributions are implementation-defined).

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

}  // namespace memopt
