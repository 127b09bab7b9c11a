// Batches whose targets are float vectors: TargetSample, TargetBatch, from(features, targets,
// ...), one_hot, and the adaptors over them.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/cache.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/from.hpp"
#include "memopt/data/labeled_batch.hpp"
#include "memopt/data/one_hot.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/repeat.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/data/take.hpp"
#include "memopt/data/target_batch.hpp"
#include "memopt/data/target_dataset.hpp"

namespace mo = memopt;

namespace {

// Row i holds i*100 + j + 1 in feature j and i*10 + k + 0.5 in target k, so that every value
// tells its row and column and none is 0.
float feature_at(std::size_t i, std::size_t j) {
  return float(i * 100 + j + 1);
}
float target_at(std::size_t i, std::size_t k) {
  return float(i * 10 + k) + 0.5f;
}

mo::data::TargetDataset make_rows(std::size_t n, std::size_t width, std::size_t target_width) {
  std::vector<float> features(n * width);
  std::vector<float> targets(n * target_width);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < width; ++j) features[i * width + j] = feature_at(i, j);
    for (std::size_t k = 0; k < target_width; ++k) targets[i * target_width + k] = target_at(i, k);
  }
  return mo::data::from(std::move(features), std::move(targets), width, target_width);
}

// The row a sample came from, read back from its first feature (see feature_at).
std::size_t row_of(std::span<const float> features) {
  return static_cast<std::size_t>(features[0] - 1) / 100;
}

// Checks that sample `s` is row `i` of make_rows: every feature and every target.
void check_row(const mo::data::TargetSample& s, std::size_t i, std::size_t width,
               std::size_t target_width) {
  REQUIRE(s.features.size() == width);
  REQUIRE(s.targets.size() == target_width);
  for (std::size_t j = 0; j < width; ++j) CHECK(s.features[j] == feature_at(i, j));
  for (std::size_t k = 0; k < target_width; ++k) CHECK(s.targets[k] == target_at(i, k));
}

// `n` labelled samples of 2 features; sample i has label labels[i].
mo::data::Dataset make_labelled(const std::vector<std::int32_t>& labels) {
  std::vector<float> features;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    features.push_back(feature_at(i, 0));
    features.push_back(feature_at(i, 1));
  }
  return mo::data::from(std::move(features), std::vector<std::int32_t>(labels), 2);
}

std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (const mo::error& e) {
    return e.what();
  }
  return "(no memopt::error)";
}

using RowsBatches = decltype(std::declval<mo::data::TargetDataset&>() | mo::data::batch(4));
using RowsStatic = decltype(std::declval<mo::data::TargetDataset&>() | mo::data::batch<4>());
using OneHotRows = decltype(std::declval<mo::data::Dataset&>() | mo::data::one_hot(10));
using ViewedRows = decltype(mo::data::from(std::span<const float>(), std::span<const float>(),
                                           std::size_t{1}, std::size_t{1}));

}  // namespace

// Pure type facts.
static_assert(mo::data::FloatTargetBatch<mo::data::TargetBatch>);
static_assert(mo::data::TrainingBatch<mo::data::TargetBatch>);
static_assert(mo::data::InputBatch<mo::data::TargetBatch>);
static_assert(!mo::data::LabeledBatch<mo::data::TargetBatch>);
static_assert(!mo::data::FloatTargetBatch<mo::data::Batch>);
static_assert(mo::data::TrainingBatch<mo::data::Batch>);
static_assert(std::same_as<mo::data::TargetSample::batch_type, mo::data::TargetBatch>);
static_assert(std::ranges::random_access_range<mo::data::TargetDataset>);
static_assert(std::ranges::sized_range<mo::data::TargetDataset>);
static_assert(
    std::same_as<std::ranges::range_reference_t<mo::data::TargetDataset>, mo::data::TargetSample>);
static_assert(std::ranges::view<ViewedRows> && std::ranges::borrowed_range<ViewedRows>);
static_assert(std::ranges::random_access_range<ViewedRows> && std::ranges::sized_range<ViewedRows>);
static_assert(
    std::same_as<std::ranges::range_reference_t<RowsBatches>, const mo::data::TargetBatch&>);
static_assert(
    std::same_as<std::ranges::range_reference_t<RowsStatic>, const mo::data::TargetBatch&>);
static_assert(std::ranges::sized_range<RowsBatches>);
static_assert(std::same_as<std::ranges::range_reference_t<OneHotRows>, mo::data::TargetSample>);
static_assert(std::ranges::random_access_range<OneHotRows> && std::ranges::sized_range<OneHotRows>);

TEST_CASE("TargetBatch: push_back stores features and targets row after row") {
  const auto rows = make_rows(3, 2, 3);
  mo::data::TargetBatch b;
  CHECK(b.empty());
  for (const mo::data::TargetSample s : rows) b.push_back(s);
  CHECK(b.size() == 3);
  CHECK(b.width() == 2);
  CHECK(b.target_width() == 3);
  CHECK(std::ranges::equal(b.features(), rows.features()));
  CHECK(std::ranges::equal(b.targets(), rows.targets()));
  CHECK(b.features()[2 * 2 + 1] == 202.f);
  CHECK(b.targets()[1 * 3 + 2] == 12.5f);
  for (std::size_t i = 0; i < 3; ++i) check_row(b[i], i, 2, 3);
  b.clear();
  CHECK(b.empty());
  CHECK(b.features().empty());
  CHECK(b.targets().empty());
}

TEST_CASE("TargetBatch: a later row of another width or target width raises memopt::error") {
  const std::vector<float> x{1.f, 2.f, 3.f};
  const std::vector<float> y{4.f, 5.f};
  mo::data::TargetBatch b;
  b.push_back({std::span<const float>(x).first(2), std::span<const float>(y).first(1)});
  const std::string wider = message_of([&] {
    b.push_back({std::span<const float>(x), std::span<const float>(y).first(1)});
  });
  CHECK(wider.find("expected every sample to have 2 features and 1 targets") != std::string::npos);
  CHECK(wider.find("found 3 features and 1 targets in row 1") != std::string::npos);
  const std::string more_targets = message_of([&] {
    b.push_back({std::span<const float>(x).first(2), std::span<const float>(y)});
  });
  CHECK(more_targets.find("found 2 features and 2 targets in row 1") != std::string::npos);
  CHECK(b.size() == 1);  // the rejected rows were not appended
  CHECK(b.features().size() == 2);
  CHECK(b.targets().size() == 1);
}

TEST_CASE("TargetBatch: after reserve, filling and refilling it never reallocates") {
  const auto rows = make_rows(8, 5, 2);
  mo::data::TargetBatch b;
  b.reserve(8, rows[0]);
  // Any reallocation while filling would move the storage the first spans point at.
  const float* features = b.features().data();
  const float* targets = b.targets().data();
  const std::size_t bytes = b.byte_size();
  for (int pass = 0; pass < 3; ++pass) {
    b.clear();
    for (const auto s : rows) {
      b.push_back(s);
      CHECK(b.features().data() == features);
      CHECK(b.targets().data() == targets);
    }
    CHECK(b.size() == 8);
    CHECK(b.byte_size() == bytes);
  }
  check_row(b[7], 7, 5, 2);
}

TEST_CASE("batch: 10 rows in batches of 4 give 4, 4 and 2 with their features and targets") {
  const auto rows = make_rows(10, 3, 2);
  auto batches = rows | mo::data::batch(4);
  CHECK(batches.size() == 3);
  std::vector<std::size_t> sizes;
  std::size_t next = 0;
  for (const mo::data::TargetBatch& b : batches) {
    sizes.push_back(b.size());
    CHECK(b.width() == 3);
    CHECK(b.target_width() == 2);
    CHECK(b.features().size() == b.size() * 3);
    CHECK(b.targets().size() == b.size() * 2);
    for (std::size_t i = 0; i < b.size(); ++i) check_row(b[i], next++, 3, 2);
  }
  CHECK(sizes == std::vector<std::size_t>{4, 4, 2});
  CHECK(next == 10);
}

TEST_CASE("batch: drop_remainder and batch<4>() give 4 and 4, dropping the last 2 rows") {
  const auto rows = make_rows(10, 3, 2);
  auto dropped = rows | mo::data::batch(4, /*drop_remainder=*/true);
  CHECK(dropped.size() == 2);
  std::vector<std::size_t> sizes;
  std::size_t next = 0;
  for (const auto& b : dropped) {
    sizes.push_back(b.size());
    for (std::size_t i = 0; i < b.size(); ++i) check_row(b[i], next++, 3, 2);
  }
  CHECK(sizes == std::vector<std::size_t>{4, 4});
  CHECK(next == 8);

  sizes.clear();
  next = 0;
  for (const mo::data::TargetBatch& b : rows | mo::data::batch<4>()) {
    sizes.push_back(b.size());
    for (std::size_t i = 0; i < b.size(); ++i) check_row(b[i], next++, 3, 2);
  }
  CHECK(sizes == std::vector<std::size_t>{4, 4});
}

TEST_CASE("batch: a TargetBatch's storage is reused, within a pass and across passes") {
  const auto rows = make_rows(40, 6, 3);
  auto batches = rows | mo::data::batch(16);
  const float* features = nullptr;
  const float* targets = nullptr;
  int seen = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& b : batches) {
      if (features == nullptr) {
        features = b.features().data();
        targets = b.targets().data();
      }
      CHECK(b.features().data() == features);
      CHECK(b.targets().data() == targets);
      ++seen;
    }
  }
  CHECK(seen == 2 * 3);
}

TEST_CASE("batch: rows of TargetSample of another target width in one batch raise an error") {
  const std::vector<float> x{1.f, 2.f, 3.f, 4.f};
  const std::vector<float> y{5.f, 6.f, 7.f};
  const std::vector<mo::data::TargetSample> rows{
      {std::span<const float>(x).first(2), std::span<const float>(y).first(1)},
      {std::span<const float>(x).last(2), std::span<const float>(y).last(2)}};
  const std::string what = message_of([&] {
    for (const auto& b : rows | mo::data::batch(2)) CHECK(b.size() == 2);
  });
  CHECK(what.find("data::TargetBatch") != std::string::npos);
  CHECK(what.find("found 2 features and 2 targets in row 1") != std::string::npos);
}

TEST_CASE("from: flat features and targets become TargetSample rows, owned or viewed") {
  const auto owned = make_rows(5, 4, 2);
  CHECK(owned.size() == 5);
  CHECK(owned.width() == 4);
  CHECK(owned.target_width() == 2);
  for (std::size_t i = 0; i < owned.size(); ++i) check_row(owned[i], i, 4, 2);

  // Viewed spans: the samples point into the caller's storage, nothing is copied.
  const std::vector<float> x(owned.features().begin(), owned.features().end());
  const std::vector<float> y(owned.targets().begin(), owned.targets().end());
  auto viewed = mo::data::from(std::span<const float>(x), std::span<const float>(y), 4, 2);
  CHECK(viewed.size() == 5);
  CHECK(viewed[3].features.data() == x.data() + 3 * 4);
  CHECK(viewed[3].targets.data() == y.data() + 3 * 2);
  std::size_t i = 0;
  for (const auto s : viewed) check_row(s, i++, 4, 2);
  CHECK(i == 5);
}

TEST_CASE("from: features and targets of different row counts raise memopt::error") {
  const std::vector<float> x(12, 1.5f);  // 3 rows of 4
  const std::vector<float> y(4, 2.5f);   // 2 rows of 2
  const std::string rows = message_of(
      [&] { (void)mo::data::from(std::span<const float>(x), std::span<const float>(y), 4, 2); });
  CHECK(rows.find("found 12 features (3 rows") != std::string::npos);
  CHECK(rows.find("and 4 targets (2 rows") != std::string::npos);
  const std::string ragged = message_of([&] { (void)mo::data::from(x, y, 5, 2); });
  CHECK(ragged.find("data::TargetDataset") != std::string::npos);
  CHECK(ragged.find("(2 rows and 2 values over)") != std::string::npos);
  const std::string zero = message_of([&] { (void)mo::data::from(x, y, 4, 0); });
  CHECK(zero.find("found 4 and 0") != std::string::npos);
}

TEST_CASE("one_hot: each class index becomes a row of num_classes with a 1 at the label") {
  const std::vector<std::int32_t> labels{2, 0, 4, 1, 3, 4};
  const auto ds = make_labelled(labels);
  auto rows = ds | mo::data::one_hot(5);
  CHECK(rows.size() == labels.size());
  std::size_t i = 0;
  for (const mo::data::TargetSample s : rows) {
    CHECK(s.features.data() == ds[i].features.data());  // features are still views
    REQUIRE(s.targets.size() == 5);
    for (std::int32_t k = 0; k < 5; ++k)
      CHECK(s.targets[static_cast<std::size_t>(k)] == (k == labels[i] ? 1.f : 0.f));
    ++i;
  }
  CHECK(i == labels.size());

  // Batched: 6 rows by 4 give 4 and 2 rows of 5 targets.
  std::vector<float> expected;
  for (const std::int32_t label : labels)
    for (std::int32_t k = 0; k < 5; ++k) expected.push_back(k == label ? 1.f : 0.f);
  std::vector<float> got;
  std::vector<std::size_t> sizes;
  for (const auto& b : ds | mo::data::one_hot(5) | mo::data::batch(4)) {
    CHECK(b.target_width() == 5);
    sizes.push_back(b.size());
    got.insert(got.end(), b.targets().begin(), b.targets().end());
  }
  CHECK(sizes == std::vector<std::size_t>{4, 2});
  CHECK(got == expected);

  // A single class: every target is {1}.
  for (const auto s : make_labelled({0, 0}) | mo::data::one_hot(1))
    CHECK(std::ranges::equal(s.targets, std::vector<float>{1.f}));
}

TEST_CASE("one_hot: a label outside [0, num_classes) raises memopt::error naming it") {
  const auto ds = make_labelled({1, 7, 2});
  auto rows = ds | mo::data::one_hot(7);
  auto it = rows.begin();
  CHECK((*it).targets[1] == 1.f);
  ++it;
  const std::string high = message_of([&] { (void)*it; });
  CHECK(high.find("expected a label in [0, 7), found 7") != std::string::npos);
  const auto negative = make_labelled({-1});
  const std::string low = message_of([&] {
    for (const auto& b : negative | mo::data::one_hot(3) | mo::data::batch(2)) CHECK(b.size() == 1);
  });
  CHECK(low.find("found -1") != std::string::npos);
  const std::string zero = message_of([] { (void)mo::data::one_hot(0); });
  CHECK(zero.find("expected a number of classes > 0, found 0") != std::string::npos);
}

TEST_CASE("shuffle, take, cache, repeat and prefetch carry TargetSample rows intact") {
  const auto rows = make_rows(12, 3, 2);

  SUBCASE("shuffle: a permutation whose targets stay with their features") {
    std::vector<std::size_t> order;
    for (const auto s : rows | mo::data::shuffle(12, 7)) {
      const std::size_t i = row_of(s.features);
      check_row(s, i, 3, 2);
      order.push_back(i);
    }
    std::vector<std::size_t> sorted = order;
    std::ranges::sort(sorted);
    std::vector<std::size_t> all(12);
    for (std::size_t i = 0; i < 12; ++i) all[i] = i;
    CHECK(sorted == all);
    CHECK(order != all);  // a 1-in-12! chance that seed 7 leaves the order unchanged: it does not
  }
  SUBCASE("take: the first n rows") {
    std::size_t i = 0;
    for (const auto s : rows | mo::data::take(5)) check_row(s, i++, 3, 2);
    CHECK(i == 5);
  }
  SUBCASE("repeat: the rows twice over") {
    std::size_t i = 0;
    for (const auto s : rows | mo::data::repeat(2)) check_row(s, i++ % 12, 3, 2);
    CHECK(i == 24);
  }
  SUBCASE("cache: the second pass replays the first") {
    auto cached = rows | mo::data::cache();
    for (int pass = 0; pass < 2; ++pass) {
      std::size_t i = 0;
      for (const auto& s : cached) check_row(s, i++, 3, 2);
      CHECK(i == 12);
    }
    CHECK(cached.cached());
  }
  SUBCASE("prefetch: rows in order, read ahead on a worker thread") {
    std::size_t i = 0;
    for (const auto& s : rows | mo::data::prefetch(3)) check_row(s, i++, 3, 2);
    CHECK(i == 12);
  }
  SUBCASE("batches through prefetch: 12 rows by 5 give 5, 5 and 2") {
    std::vector<std::size_t> sizes;
    std::size_t next = 0;
    for (const auto& b : rows | mo::data::batch(5) | mo::data::prefetch(2)) {
      sizes.push_back(b.size());
      for (std::size_t i = 0; i < b.size(); ++i) check_row(b[i], next++, 3, 2);
    }
    CHECK(sizes == std::vector<std::size_t>{5, 5, 2});
  }
}

TEST_CASE("one_hot, then cache and shuffle: the held targets stay valid over passes") {
  const std::vector<std::int32_t> labels{3, 1, 0, 2, 1, 3, 0, 2};
  auto pipeline = make_labelled(labels) | mo::data::one_hot(4) | mo::data::cache();
  for (int pass = 0; pass < 3; ++pass) {
    std::size_t seen = 0;
    // By reference: a copy of the cache would start empty on every pass.
    for (const auto& b :
         std::ranges::ref_view(pipeline) | mo::data::shuffle(8, 11) | mo::data::batch(3)) {
      for (std::size_t r = 0; r < b.size(); ++r) {
        const auto s = b[r];
        const std::int32_t label = labels[row_of(s.features)];
        for (std::int32_t k = 0; k < 4; ++k)
          CHECK(s.targets[static_cast<std::size_t>(k)] == (k == label ? 1.f : 0.f));
        ++seen;
      }
    }
    CHECK(seen == labels.size());
    CHECK(pipeline.cached());
  }
}
