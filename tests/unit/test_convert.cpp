// Bulk conversions agree bit for bit with the scalar ones, vectorised or not.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <memopt/core/convert.hpp>
#include <memopt/core/random.hpp>

namespace mo = memopt;

namespace {
std::vector<float> awkward_floats() {
  mo::Rng rng(3);
  std::vector<float> f(1003);  // not a multiple of the vector width
  for (float& x : f) x = rng.uniform(-7e4f, 7e4f) * std::pow(10.0f, rng.uniform(-9.0f, 0.0f));
  f[1] = std::numeric_limits<float>::infinity();
  f[2] = -std::numeric_limits<float>::infinity();
  f[3] = 65520.0f;  // rounds to inf in half
  f[4] = 1e-8f;     // a half subnormal
  f[5] = -0.0f;
  f[6] = std::numeric_limits<float>::quiet_NaN();
  return f;
}

template <class T>
void round_trips_like_scalar() {
  const std::vector<float> f = awkward_floats();
  std::vector<T> narrow(f.size());
  mo::convert(f.data(), narrow.data(), f.size());
  std::vector<float> back(f.size());
  mo::convert(narrow.data(), back.data(), narrow.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    const T scalar(f[i]);
    if (std::isnan(f[i])) {
      CHECK(std::isnan(back[i]));
      continue;
    }
    REQUIRE(narrow[i].bits == scalar.bits);
    REQUIRE(back[i] == static_cast<float>(scalar));
  }
}
}  // namespace

TEST_CASE("bulk float <-> half conversion matches the scalar conversion") {
  round_trips_like_scalar<mo::half>();
}

TEST_CASE("bulk float <-> bfloat16 conversion matches the scalar conversion") {
  round_trips_like_scalar<mo::bfloat16>();
}
