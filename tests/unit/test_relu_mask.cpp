// ReLU's 1-bit mask (backend/cpu/relu_mask.hpp) against a bit-by-bit reference: every length
// around the vector width, the values at the edge of "> 0" (-0, the smallest subnormal, NaN),
// and each element type. tests/native builds this file again with the host's vector
// instructions, where pack_relu_mask takes its AVX2 path.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <memopt/backend/cpu/relu_mask.hpp>
#include <memopt/core/dtype.hpp>
#include <memopt/core/random.hpp>

namespace {

template <class T>
std::vector<T> edge_values(std::size_t n, std::uint64_t seed) {
  const float edges[] = {0.0f,
                         -0.0f,
                         std::numeric_limits<float>::denorm_min(),
                         -std::numeric_limits<float>::denorm_min(),
                         std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         1e-3f};
  memopt::Rng rng{seed};
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = i % 3 == 0 ? T(edges[(i / 3) % 8]) : T(rng.uniform(-1.0f, 1.0f));
  return v;
}

template <class T>
void check_pack(std::size_t n, std::uint64_t seed) {
  const auto v = edge_values<T>(n, seed);
  std::vector<std::uint8_t> mask((n + 7) / 8 + 1, 0xa5);  // one guard byte past the end
  memopt::cpu_backend::pack_relu_mask(v.data(), n, mask.data());
  std::size_t wrong = 0;
  for (std::size_t u = 0; u < (n + 7) / 8 * 8; ++u) {
    const bool expected = u<n&& static_cast<float>(v[u])> 0.0f;  // unused bits are 0
    wrong += ((mask[u / 8] >> (u % 8)) & 1u) == (expected ? 1u : 0u) ? 0 : 1;
  }
  CHECK(wrong == 0);
  CHECK(mask.back() == 0xa5);
}

}  // namespace

TEST_CASE("pack_relu_mask: bit u is values[u] > 0 for every length and element type") {
  for (std::size_t n = 0; n <= 70; ++n) {
    CAPTURE(n);
    check_pack<float>(n, n + 1);
    check_pack<memopt::bfloat16>(n, n + 2);
    check_pack<memopt::half>(n, n + 3);
  }
  check_pack<float>(26 * 26 * 32 + 5, 7);
  check_pack<memopt::bfloat16>(26 * 26 * 32 + 5, 8);
}

TEST_CASE("mask_relu_gradient: zeroes exactly the gradients whose bit is 0, from any bit") {
  const std::size_t bits = 203;
  memopt::Rng rng{42};
  std::vector<std::uint8_t> mask((bits + 7) / 8);
  for (auto& m : mask) m = static_cast<std::uint8_t>(rng.uniform(0.0f, 256.0f));
  for (std::size_t first : {std::size_t{0}, std::size_t{3}, std::size_t{8}, std::size_t{17}}) {
    CAPTURE(first);
    const std::size_t n = bits - first;
    std::vector<float> g(n);
    for (auto& x : g) x = rng.uniform(0.5f, 1.5f);  // never 0, so a kept value shows
    const std::vector<float> before = g;
    memopt::cpu_backend::mask_relu_gradient(mask.data(), first, g.data(), n);
    std::size_t wrong = 0, kept = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const bool bit = (mask[(first + k) / 8] >> ((first + k) % 8)) & 1u;
      wrong += g[k] == (bit ? before[k] : 0.0f) ? 0 : 1;
      kept += bit ? 1 : 0;
    }
    CHECK(wrong == 0);
    CHECK(kept > 0);
    CHECK(kept < n);
  }
}
