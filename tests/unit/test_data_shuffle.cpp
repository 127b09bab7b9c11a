// data::shuffle: tf.data's buffered shuffle, deterministic under a seed, new order each pass.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <ranges>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/from.hpp"
#include "memopt/data/generate.hpp"
#include "memopt/data/map.hpp"
#include "memopt/data/pass.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/repeat.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/data/take.hpp"

namespace mo = memopt;

namespace {

template <class R>
std::vector<int> pass(R& range) {
  std::vector<int> out;
  for (auto&& x : range) out.push_back(static_cast<int>(x));
  return out;
}

std::vector<int> iota_vector(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

bool is_permutation_of_iota(std::vector<int> v) {
  std::ranges::sort(v);
  return v == iota_vector(static_cast<int>(v.size()));
}

}  // namespace

static_assert(std::ranges::input_range<decltype(mo::data::range(5) | mo::data::shuffle(5, 1))>);
static_assert(std::ranges::view<decltype(mo::data::range(5) | mo::data::shuffle(5, 1))>);
static_assert(std::ranges::sized_range<decltype(mo::data::range(5) | mo::data::shuffle(5, 1))>);

TEST_CASE("shuffle: every element once per pass, and the order differs from pass to pass") {
  auto shuffled = mo::data::range(1000) | mo::data::shuffle(1000, 7);
  CHECK(shuffled.size() == 1000);
  std::vector<std::vector<int>> passes;
  for (int p = 0; p < 4; ++p) passes.push_back(pass(shuffled));
  for (const auto& order : passes) {
    CHECK(order.size() == 1000);
    CHECK(is_permutation_of_iota(order));
    CHECK(order != iota_vector(1000));
  }
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) CHECK(passes[a] != passes[b]);
  }
}

TEST_CASE("shuffle: the same seed gives the same sequence of passes; another seed does not") {
  auto a = mo::data::range(500) | mo::data::shuffle(100, 42);
  auto b = mo::data::range(500) | mo::data::shuffle(100, 42);
  auto c = mo::data::range(500) | mo::data::shuffle(100, 43);
  const auto a1 = pass(a), a2 = pass(a);
  CHECK(a1 == pass(b));
  CHECK(a2 == pass(b));
  CHECK(a1 != pass(c));
  // Platform-independent: the first elements under seed 42 are fixed by memopt::Rng.
  auto small = mo::data::range(10) | mo::data::shuffle(10, 42);
  const auto once = pass(small);
  auto again = mo::data::range(10) | mo::data::shuffle(10, 42);
  CHECK(pass(again) == once);
}

TEST_CASE("shuffle: reshuffle_each_iteration = false repeats the first pass's order") {
  auto fixed = mo::data::range(200) | mo::data::shuffle(50, 3, /*reshuffle_each_iteration=*/false);
  const auto first = pass(fixed);
  CHECK(pass(fixed) == first);
  CHECK(pass(fixed) == first);
  CHECK(first != iota_vector(200));
}

TEST_CASE("shuffle: a buffer of B elements moves an element at most B - 1 places earlier") {
  // The element at output position k came from the buffer, which then held elements
  // [0, k + B) at most: so element e cannot appear before position e - (B - 1).
  constexpr int kB = 16;
  auto local = mo::data::range(2000) | mo::data::shuffle(kB, 5);
  for (int p = 0; p < 3; ++p) {
    const auto order = pass(local);
    CHECK(is_permutation_of_iota(order));
    for (std::size_t k = 0; k < order.size(); ++k) CHECK(order[k] <= static_cast<int>(k) + kB - 1);
  }
  // A buffer of 1 is no shuffle at all.
  auto none = mo::data::range(50) | mo::data::shuffle(1, 5);
  CHECK(pass(none) == iota_vector(50));
}

TEST_CASE("shuffle: a buffer as large as the dataset is a uniform shuffle") {
  // Over many passes each of 8 elements comes first about equally often, and each element
  // lands in each position about equally often (8 x 8 cells, 4000 passes: 500 expected each).
  constexpr int kN = 8, kPasses = 4000;
  auto full = mo::data::range(kN) | mo::data::shuffle(kN, 11);
  std::vector<int> counts(kN * kN, 0);
  for (int p = 0; p < kPasses; ++p) {
    const auto order = pass(full);
    for (int pos = 0; pos < kN; ++pos) ++counts[static_cast<std::size_t>(order[pos] * kN + pos)];
  }
  double chi2 = 0;
  const double expected = double(kPasses) / kN;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  // 49 degrees of freedom ((8-1)^2): the 99.9% quantile of chi-square is about 85.
  CHECK(chi2 < 85.0);
  // A buffer larger than the dataset is the same full shuffle.
  auto larger = mo::data::range(kN) | mo::data::shuffle(10 * kN, 11);
  CHECK(is_permutation_of_iota(pass(larger)));
}

TEST_CASE("shuffle: lazy; reads buffer_size elements on begin(), then one per element") {
  int produced = 0;
  auto counted = mo::data::range(100) | std::views::transform([&produced](int i) {
                   ++produced;
                   return i;
                 });
  auto shuffled = counted | mo::data::shuffle(10, 1);
  CHECK(produced == 0);
  auto it = shuffled.begin();
  CHECK(produced == 10);
  ++it;
  CHECK(produced == 11);
  ++it;
  ++it;
  CHECK(produced == 13);
}

TEST_CASE("shuffle: samples of a Dataset, batched, keep features with their labels") {
  std::vector<float> features(60 * 2);
  std::vector<std::int32_t> labels(60);
  for (int i = 0; i < 60; ++i) {
    features[static_cast<std::size_t>(2 * i)] = float(i);
    features[static_cast<std::size_t>(2 * i + 1)] = float(-i);
    labels[static_cast<std::size_t>(i)] = i;
  }
  const auto ds = mo::data::from(std::move(features), std::move(labels), 2);
  auto batches = ds | mo::data::shuffle(60, 9) | mo::data::batch(16);
  CHECK(batches.size() == 4);
  std::vector<int> seen;
  for (const mo::data::Batch& b : batches) {
    for (std::size_t r = 0; r < b.size(); ++r) {
      CHECK(b[r].features[0] == float(b[r].label));
      CHECK(b[r].features[1] == float(-b[r].label));
      seen.push_back(b[r].label);
    }
  }
  CHECK(is_permutation_of_iota(seen));
  CHECK(seen != iota_vector(60));
}

TEST_CASE("shuffle: move-only elements are moved through the buffer") {
  int n = 0;
  auto boxes = mo::data::generate([&] { return std::make_unique<int>(n++); }) | mo::data::take(20) |
               mo::data::shuffle(8, 2);
  std::vector<int> values;
  for (auto& p : boxes) values.push_back(*p);
  CHECK(is_permutation_of_iota(values));
  // Taking an element by value moves it out; the buffer refills that place afterwards.
  n = 0;
  auto again = mo::data::generate([&] { return std::make_unique<int>(n++); }) | mo::data::take(5) |
               mo::data::shuffle(5, 2) | mo::data::map([](std::unique_ptr<int> p) { return *p; });
  CHECK(is_permutation_of_iota(pass(again)));
}

TEST_CASE("shuffle: a buffer size of 0 raises memopt::error where it is written") {
  CHECK_THROWS_WITH_AS(mo::data::shuffle(0, 1),
                       doctest::Contains("expected a buffer size > 0, found 0"), mo::error);
  CHECK_THROWS_AS(mo::data::range(3) | mo::data::shuffle(-1, 1), mo::error);
}

TEST_CASE("shuffle under a PassScope draws that pass's order, in a fresh view too") {
  // What fit relies on to resume: epoch e of a new process shuffles as pass e of the old one.
  auto counted = mo::data::range(50) | mo::data::shuffle(16, 9);
  std::vector<std::vector<int>> orders;
  for (int p = 0; p < 4; ++p) orders.push_back(pass(counted));
  CHECK(orders[1] != orders[0]);
  CHECK(orders[3] != orders[2]);

  for (std::uint64_t p : {2u, 0u, 3u}) {
    CAPTURE(p);
    auto fresh = mo::data::range(50) | mo::data::shuffle(16, 9);
    const mo::data::PassScope scope(p);
    CHECK(pass(fresh) == orders[p]);
  }
  // Outside a scope the view goes on counting after the last pass a scope named.
  auto fresh = mo::data::range(50) | mo::data::shuffle(16, 9);
  {
    const mo::data::PassScope scope(2);
    (void)pass(fresh);
  }
  CHECK(pass(fresh) == orders[3]);
}

TEST_CASE("a PassScope reaches a shuffle through prefetch's worker and through repeat") {
  auto counted = mo::data::range(40) | mo::data::shuffle(40, 4);
  std::vector<std::vector<int>> orders;
  for (int p = 0; p < 6; ++p) orders.push_back(pass(counted));

  auto ahead = mo::data::range(40) | mo::data::shuffle(40, 4) | mo::data::prefetch(3);
  {
    const mo::data::PassScope scope(4);
    CHECK(pass(ahead) == orders[4]);
  }
  // repeat(2)'s pass p reads upstream's passes 2p and 2p + 1.
  auto twice = mo::data::range(40) | mo::data::shuffle(40, 4) | mo::data::repeat(2);
  std::vector<int> expected = orders[2];
  expected.insert(expected.end(), orders[3].begin(), orders[3].end());
  const mo::data::PassScope scope(1);
  CHECK(pass(twice) == expected);
}
