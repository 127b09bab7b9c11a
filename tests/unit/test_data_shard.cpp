// data::shard: tf.data's semantics (element i to shard i % n), disjoint and complete shards,
// sizes, reading past the others' elements on a range without random access, and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <ranges>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/generate.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/shard.hpp"
#include "memopt/data/take.hpp"

namespace mo = memopt;

namespace {

template <class R>
std::vector<int> elements(R&& range) {
  std::vector<int> out;
  for (auto&& x : range) out.push_back(static_cast<int>(x));
  return out;
}

}  // namespace

TEST_CASE("data::shard keeps element i in shard i % num_shards") {
  const std::vector<int> v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(elements(v | mo::data::shard(3, 0)) == std::vector<int>{0, 3, 6, 9});
  CHECK(elements(v | mo::data::shard(3, 1)) == std::vector<int>{1, 4, 7});
  CHECK(elements(v | mo::data::shard(3, 2)) == std::vector<int>{2, 5, 8});
  CHECK(elements(v | mo::data::shard(1, 0)) == v);
  CHECK(elements(v | mo::data::shard(12, 11)).empty());
}

TEST_CASE("data::shard: shards are disjoint and together cover the data, with their sizes") {
  for (int n : {2, 3}) {
    std::vector<int> all;
    for (int i = 0; i < n; ++i) {
      auto shard = mo::data::range(10) | mo::data::shard(n, i);
      const std::vector<int> mine = elements(shard);
      CHECK(shard.size() == mine.size());
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::ranges::sort(all);
    CHECK(all == elements(mo::data::range(10)));  // complete, and no element twice
  }
}

TEST_CASE("data::shard over a range without random access reads the others' elements") {
  int next = 0;
  auto counter = mo::data::generate([&next] { return next++; }) | mo::data::take(7);
  CHECK(elements(counter | mo::data::shard(2, 1)) == std::vector<int>{1, 3, 5});
}

TEST_CASE("data::shard pipes into batch") {
  std::vector<std::vector<int>> batches;
  for (auto b : mo::data::range(10) | mo::data::shard(2, 1) | mo::data::batch(2))
    batches.emplace_back(b.begin(), b.end());
  CHECK(batches == std::vector<std::vector<int>>{{1, 3}, {5, 7}, {9}});
}

TEST_CASE("data::shard refuses no shards and an index outside them") {
  CHECK_THROWS_WITH_AS(mo::data::shard(0, 0), "data::shard: expected num_shards >= 1, found 0",
                       mo::error);
  CHECK_THROWS_WITH_AS(mo::data::shard(2, 2), "data::shard: expected an index in [0, 2), found 2",
                       mo::error);
  CHECK_THROWS_WITH_AS(mo::data::shard(2, -1), "data::shard: expected an index in [0, 2), found -1",
                       mo::error);
  const std::vector<int> v{1, 2};
  CHECK_THROWS_AS(v | mo::data::shard(3, 3), mo::error);
}
