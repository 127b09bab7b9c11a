// data::range, data::from and data::generate: the sources of a pipeline.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/from.hpp"
#include "memopt/data/generate.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/take.hpp"

namespace mo = memopt;

namespace {

template <std::ranges::input_range R>
std::vector<std::ranges::range_value_t<R>> collect(R&& range) {
  std::vector<std::ranges::range_value_t<R>> out;
  for (auto&& x : range) out.push_back(x);
  return out;
}

using Ints = std::vector<int>;

}  // namespace

static_assert(std::ranges::random_access_range<decltype(mo::data::range(10))>);
static_assert(std::ranges::sized_range<decltype(mo::data::range(2, 20, 3))>);
static_assert(std::ranges::view<decltype(mo::data::from(std::declval<std::vector<int>&>()))>);
static_assert(std::same_as<decltype(mo::data::from(std::declval<std::vector<int>&>())),
                           std::ranges::ref_view<std::vector<int>>>);
static_assert(std::same_as<decltype(mo::data::from(std::vector<int>{})),
                           std::ranges::owning_view<std::vector<int>>>);

TEST_CASE("range: tf.data's Dataset.range(stop), range(start, stop) and range(start, stop, step)") {
  CHECK(collect(mo::data::range(5)) == Ints{0, 1, 2, 3, 4});
  CHECK(collect(mo::data::range(0)).empty());
  CHECK(collect(mo::data::range(-3)).empty());
  CHECK(collect(mo::data::range(3, 7)) == Ints{3, 4, 5, 6});
  CHECK(collect(mo::data::range(7, 3)).empty());
  CHECK(collect(mo::data::range(0, 10, 3)) == Ints{0, 3, 6, 9});
  CHECK(collect(mo::data::range(0, 9, 3)) == Ints{0, 3, 6});
  CHECK(collect(mo::data::range(5, 0, -2)) == Ints{5, 3, 1});
  CHECK(collect(mo::data::range(0, 5, -1)).empty());
  CHECK(mo::data::range(2, 20, 3).size() == 6);
  CHECK(collect(mo::data::range(std::size_t{2}, std::size_t{8}, std::size_t{4})) ==
        std::vector<std::size_t>{2, 6});
  CHECK_THROWS_WITH_AS(mo::data::range(0, 5, 0), doctest::Contains("step other than 0"), mo::error);
}

TEST_CASE("range: the guide's Dataset.range(1000).batch(32)") {
  auto batches = mo::data::range(1000) | mo::data::batch(32);
  CHECK(batches.size() == 32);
  int next = 0;
  for (std::span<const int> b : batches) {
    for (int v : b) CHECK(v == next++);
  }
  CHECK(next == 1000);
}

TEST_CASE("from: an lvalue container is viewed, an rvalue or a braced list is owned") {
  std::vector<int> xs{1, 2, 3};
  auto viewed = mo::data::from(xs);
  xs[0] = 10;  // a view sees later changes: nothing was copied
  CHECK(collect(viewed) == Ints{10, 2, 3});

  auto owned = mo::data::from(std::vector<int>{4, 5});
  CHECK(collect(owned) == Ints{4, 5});
  CHECK(collect(owned) == Ints{4, 5});  // every pass sees the same values

  CHECK(collect(mo::data::from({1.5, 2.5})) == std::vector<double>{1.5, 2.5});

  const float raw[] = {1.f, 2.f, 3.f, 4.f};
  auto span = mo::data::from(std::span<const float>(raw).subspan(1, 2));
  CHECK(collect(span) == std::vector<float>{2.f, 3.f});
}

TEST_CASE("generate: fn is called once per element read, and not before") {
  int calls = 0;
  auto gen = mo::data::generate([&] { return ++calls * 10; });
  CHECK(calls == 0);
  auto first3 = gen | mo::data::take(3);
  CHECK(calls == 0);
  CHECK(collect(first3) == Ints{10, 20, 30});
  CHECK(calls == 3);

  // Reading an element twice calls fn once.
  calls = 0;
  auto g2 = mo::data::generate([&] { return ++calls; });
  auto it = g2.begin();
  CHECK(*it == 1);
  CHECK(*it == 1);
  ++it;
  CHECK(*it == 2);
  CHECK(calls == 2);
  static_assert(!std::ranges::sized_range<decltype(g2)>);
}

TEST_CASE("generate: an optional result ends the pass at the first nullopt") {
  int n = 0;
  auto five = mo::data::generate([&]() -> std::optional<int> {
    if (n < 5) return n++;
    return std::nullopt;
  });
  CHECK(collect(five) == Ints{0, 1, 2, 3, 4});
  // A new pass calls the same function, which carries on from where it is.
  n = 3;
  CHECK(collect(five) == Ints{3, 4});
}

TEST_CASE("generate: move-only results are handed over") {
  int n = 0;
  auto boxes = mo::data::generate([&] { return std::make_unique<int>(n++); }) | mo::data::take(3);
  std::vector<std::unique_ptr<int>> kept;
  for (auto& p : boxes) kept.push_back(std::move(p));
  REQUIRE(kept.size() == 3);
  CHECK(*kept[0] == 0);
  CHECK(*kept[2] == 2);
}
