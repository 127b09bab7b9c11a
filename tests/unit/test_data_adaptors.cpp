// data::map, filter, take, skip, repeat, cache and batch<N>: small lazy adaptors that pipe
// into each other and into std::views.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <ranges>
#include <span>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/cache.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/filter.hpp"
#include "memopt/data/from.hpp"
#include "memopt/data/generate.hpp"
#include "memopt/data/map.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/repeat.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/data/skip.hpp"
#include "memopt/data/static_batch.hpp"
#include "memopt/data/take.hpp"

namespace mo = memopt;

namespace {

template <class R>
std::vector<int> pass(R&& range) {
  std::vector<int> out;
  for (auto&& x : range) out.push_back(static_cast<int>(x));
  return out;
}

using Ints = std::vector<int>;

// A source that counts the elements it produces.
auto counting(int n, int& produced) {
  return mo::data::range(n) | std::views::transform([&produced](int i) {
           ++produced;
           return i;
         });
}

// A source that records how far into it anything has read: one past the highest index.
auto reaching(int n, int& reach) {
  return mo::data::range(n) | std::views::transform([&reach](int i) {
           reach = std::max(reach, i + 1);
           return i;
         });
}

mo::data::Dataset numbered(int n, std::size_t width) {
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < width; ++j) features.push_back(float(i));
    labels.push_back(i);
  }
  return mo::data::from(std::move(features), std::move(labels), width);
}

}  // namespace

using Static = decltype(std::declval<mo::data::Dataset&>() | mo::data::batch<32>());
static_assert(
    std::same_as<std::ranges::range_reference_t<Static>, const mo::data::StaticBatch<32>&>);
static_assert(mo::data::StaticBatch<32>::size() == 32);
static_assert(mo::data::LabeledBatch<mo::data::StaticBatch<32>>);
static_assert(std::same_as<
              std::ranges::range_reference_t<decltype(mo::data::range(9) | mo::data::batch<4>())>,
              std::span<const int, 4>>);
static_assert(std::ranges::view<decltype(mo::data::range(9) | mo::data::repeat(2))>);
static_assert(std::ranges::view<decltype(mo::data::range(9) | mo::data::cache())>);

TEST_CASE("map: lazy and sequential without threads, one call per element read") {
  int calls = 0;
  auto squares = mo::data::range(5) | mo::data::map([&calls](int i) {
                   ++calls;
                   return i * i;
                 });
  CHECK(calls == 0);
  CHECK(pass(squares) == Ints{0, 1, 4, 9, 16});
  CHECK(calls == 5);
  static_assert(std::ranges::random_access_range<decltype(squares)>);
  // A move-only element that the source hands over is passed as an rvalue.
  int n = 0;
  auto unboxed = mo::data::generate([&n] { return std::make_unique<int>(n++); }) |
                 mo::data::map([](std::unique_ptr<int> p) { return *p + 100; }) | mo::data::take(3);
  CHECK(pass(unboxed) == Ints{100, 101, 102});
}

TEST_CASE("filter: keeps the elements for which the predicate holds") {
  auto odd = mo::data::range(10) | mo::data::filter([](int i) { return i % 2 == 1; });
  CHECK(pass(odd) == Ints{1, 3, 5, 7, 9});
  const auto ds = numbered(20, 2);
  auto small = ds | mo::data::filter([](const mo::data::Sample& s) { return s.label < 5; }) |
               mo::data::batch(2);
  std::size_t rows = 0;
  for (const auto& b : small) rows += b.size();
  CHECK(rows == 5);
}

TEST_CASE("take and skip: tf.data's take(n) and skip(n)") {
  CHECK(pass(mo::data::range(10) | mo::data::take(3)) == Ints{0, 1, 2});
  CHECK(pass(mo::data::range(2) | mo::data::take(5)) == Ints{0, 1});
  CHECK(pass(mo::data::range(10) | mo::data::skip(7)) == Ints{7, 8, 9});
  CHECK(pass(mo::data::range(3) | mo::data::skip(5)).empty());
  CHECK(pass(mo::data::range(10) | mo::data::skip(2) | mo::data::take(3)) == Ints{2, 3, 4});
  CHECK_THROWS_WITH_AS(mo::data::take(-1), doctest::Contains("expected a count >= 0, found -1"),
                       mo::error);
  CHECK_THROWS_AS(mo::data::skip(-2), mo::error);

  int produced = 0;
  auto first = counting(100, produced) | mo::data::take(4);
  CHECK(pass(first) == Ints{0, 1, 2, 3});
  CHECK(produced == 4);
}

TEST_CASE("repeat: count passes in a row; each pass is a fresh begin() upstream") {
  CHECK(pass(mo::data::range(3) | mo::data::repeat(2)) == Ints{0, 1, 2, 0, 1, 2});
  CHECK(pass(mo::data::range(3) | mo::data::repeat(0)).empty());
  CHECK(pass(mo::data::range(3) | mo::data::repeat() | mo::data::take(7)) ==
        Ints{0, 1, 2, 0, 1, 2, 0});
  // An empty range repeated forever is empty, not an endless loop.
  CHECK(pass(mo::data::range(0) | mo::data::repeat()).empty());
  // A shuffle before repeat reshuffles every time round, as in tf.data.
  auto epochs = mo::data::range(50) | mo::data::shuffle(50, 8) | mo::data::repeat(2);
  const auto both = pass(epochs);
  REQUIRE(both.size() == 100);
  const Ints first(both.begin(), both.begin() + 50), second(both.begin() + 50, both.end());
  CHECK(first != second);
  CHECK(std::is_permutation(first.begin(), first.end(), second.begin()));
  // Batches run across the boundary between passes.
  std::vector<std::size_t> sizes;
  for (auto b : mo::data::range(5) | mo::data::repeat(2) | mo::data::batch(4)) {
    sizes.push_back(b.size());
  }
  CHECK(sizes == std::vector<std::size_t>{4, 4, 2});
}

TEST_CASE("cache: the first complete pass reads upstream; later passes replay it") {
  int produced = 0;
  auto cached = counting(6, produced) | mo::data::cache();
  CHECK(produced == 0);
  CHECK(cached.size() == 6);
  CHECK(pass(cached) == Ints{0, 1, 2, 3, 4, 5});
  CHECK(produced == 6);
  CHECK(cached.cached());
  CHECK(pass(cached) == Ints{0, 1, 2, 3, 4, 5});
  CHECK(produced == 6);

  // A first pass left early keeps nothing: the next one reads upstream again.
  produced = 0;
  auto partial = counting(6, produced) | mo::data::cache();
  for (int x : partial) {
    if (x == 2) break;
  }
  CHECK(produced == 3);
  CHECK(!partial.cached());
  CHECK(pass(partial) == Ints{0, 1, 2, 3, 4, 5});
  CHECK(produced == 9);

  // Move-only generated values are cached by moving them in.
  int n = 0;
  auto boxes = mo::data::generate([&n] { return std::make_unique<int>(n++); }) | mo::data::take(3) |
               mo::data::cache();
  for (int p = 0; p < 2; ++p) {
    int expected = 0;
    for (const std::unique_ptr<int>& b : boxes) CHECK(*b == expected++);
    CHECK(expected == 3);
  }
}

TEST_CASE("batch<N>: exactly N rows per batch, N in the type; a partial batch is dropped") {
  const auto ds = numbered(70, 3);
  auto batches = ds | mo::data::batch<32>();
  CHECK(batches.size() == 2);
  int next = 0;
  for (const mo::data::StaticBatch<32>& b : batches) {
    std::span<const std::int32_t, 32> labels = b.labels();
    CHECK(labels[0] == next);
    CHECK(b.features().size() == 32 * 3);
    CHECK(b.width() == 3);
    CHECK(b[31].label == next + 31);
    next += 32;
  }
  CHECK(next == 64);

  std::vector<int> firsts;
  for (std::span<const int, 4> s : mo::data::batch<4>(mo::data::range(10))) firsts.push_back(s[0]);
  CHECK(firsts == Ints{0, 4});
}

TEST_CASE("a whole pipeline is lazy: nothing is read before iteration, only what is used") {
  int reach = 0;
  auto pipeline = reaching(1000, reach) | mo::data::map([](int i) { return i + 1; }) |
                  mo::data::filter([](int i) { return i % 2 == 0; }) | mo::data::batch(4) |
                  mo::data::take(2);
  CHECK(reach == 0);
  std::vector<int> values;
  for (std::span<const int> b : pipeline) values.insert(values.end(), b.begin(), b.end());
  CHECK(values == Ints{2, 4, 6, 8, 10, 12, 14, 16});
  // 16 source elements make the 8 even values of two batches; nothing after them is read.
  CHECK(reach == 16);

  // The same through shuffle and prefetch: begin() of a shuffle reads its buffer, and a
  // prefetch of depth 1 reads at most one batch more than the consumer has taken.
  reach = 0;
  auto ahead = reaching(1000, reach) | mo::data::shuffle(10, 1) | mo::data::batch(5) |
               mo::data::prefetch(1) | mo::data::take(2);
  CHECK(reach == 0);
  std::size_t rows = 0;
  for (std::span<const int> b : ahead) rows += b.size();
  CHECK(rows == 10);
  CHECK(reach >= 10 + 9);   // two batches of 5 drawn from a buffer of 10
  CHECK(reach <= 10 + 14);  // plus at most one batch ahead
}

TEST_CASE("adaptors compose with std::views on either side") {
  auto mixed = std::views::iota(0, 100) | mo::data::shuffle(100, 4) |
               std::views::filter([](int i) { return i < 10; }) | mo::data::batch(3) |
               std::views::take(2);
  std::size_t rows = 0;
  for (std::span<const int> b : mixed) {
    for (int v : b) CHECK(v < 10);
    rows += b.size();
  }
  CHECK(rows == 6);
  auto closures =
      mo::data::map([](int i) { return 2 * i; }) | mo::data::skip(1) | mo::data::take(3);
  CHECK(pass(mo::data::range(10) | closures) == Ints{2, 4, 6});
  auto prefetched = mo::data::range(10) | mo::data::prefetch(2) |
                    std::views::transform([](int i) { return i * 3; }) | std::views::take(3);
  CHECK(pass(prefetched) == Ints{0, 3, 6});
}
