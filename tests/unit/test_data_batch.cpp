// data::Dataset and data::batch: an in-memory dataset and the lazy batching adaptor.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/any_batches.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/labeled_batch.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/data/target_dataset.hpp"

namespace mo = memopt;

namespace {

// `n` samples of `width` features: sample i holds i*100 + j in feature j, label i % 10.
mo::data::Dataset make_dataset(std::size_t n, std::size_t width) {
  std::vector<float> features(n * width);
  std::vector<std::int32_t> labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < width; ++j) features[i * width + j] = float(i * 100 + j);
    labels[i] = std::int32_t(i % 10);
  }
  return mo::data::from(std::move(features), std::move(labels), width);
}

// A second adaptor built on the shared pipe machinery, to prove closures compose.
struct first_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t n) const {
    return std::views::take(std::forward<R>(range), n);
  }
  auto operator()(std::ptrdiff_t n) const { return mo::data::detail::bind_back(*this, n); }
};
inline constexpr first_fn first{};

using DatasetBatches = decltype(std::declval<mo::data::Dataset&>() | mo::data::batch(32));
using IotaBatches = decltype(std::views::iota(0, 10) | mo::data::batch(4));

}  // namespace

// Pure type facts.
static_assert(std::ranges::random_access_range<mo::data::Dataset>);
static_assert(std::ranges::sized_range<mo::data::Dataset>);
static_assert(std::same_as<std::ranges::range_reference_t<mo::data::Dataset>, mo::data::Sample>);
static_assert(mo::data::LabeledBatch<mo::data::Batch>);
static_assert(std::ranges::view<DatasetBatches> && std::ranges::input_range<DatasetBatches>);
static_assert(std::ranges::sized_range<DatasetBatches>);
static_assert(std::same_as<std::ranges::range_reference_t<DatasetBatches>, const mo::data::Batch&>);
static_assert(std::same_as<std::ranges::range_reference_t<IotaBatches>, std::span<const int>>);
// An lvalue dataset is piped by reference, an rvalue one is moved in.
static_assert(
    std::same_as<DatasetBatches, mo::data::BatchView<std::ranges::ref_view<mo::data::Dataset>>>);
static_assert(std::same_as<decltype(make_dataset(1, 1) | mo::data::batch(2)),
                           mo::data::BatchView<std::ranges::owning_view<mo::data::Dataset>>>);

TEST_CASE("Dataset: from() owns row-major features and labels and views them as Samples") {
  const auto ds = make_dataset(5, 3);
  CHECK(ds.size() == 5);
  CHECK(ds.width() == 3);
  CHECK(std::ranges::size(ds) == 5);
  const mo::data::Sample third = ds[2];
  CHECK(third.label == 2);
  CHECK(std::vector<float>(third.features.begin(), third.features.end()) ==
        std::vector<float>{200, 201, 202});
  CHECK((*(ds.begin() + 4)).label == 4);
  CHECK(ds.end() - ds.begin() == 5);
  std::int32_t sum = 0;
  for (mo::data::Sample s : ds) sum += s.label;
  CHECK(sum == 0 + 1 + 2 + 3 + 4);
}

TEST_CASE("Dataset: from() with features that do not match labels x width raises memopt::error") {
  CHECK_THROWS_WITH_AS(mo::data::from(std::vector<float>(11), std::vector<std::int32_t>(3), 4),
                       doctest::Contains("expected 3 labels x 4 features per sample = 12 "
                                         "features, found 11 features"),
                       mo::error);
  CHECK_THROWS_WITH_AS(mo::data::from({}, {}, 0), doctest::Contains("found 0"), mo::error);
}

TEST_CASE("batch: a dataset in batches of 4 keeps the partial last batch") {
  const auto ds = make_dataset(10, 3);
  auto batches = ds | mo::data::batch(4);
  CHECK(batches.size() == 3);
  std::vector<std::size_t> sizes;
  std::vector<std::int32_t> labels;
  std::vector<float> features;
  for (const mo::data::Batch& b : batches) {
    CHECK(b.width() == 3);
    CHECK(b.features().size() == b.size() * 3);
    sizes.push_back(b.size());
    labels.insert(labels.end(), b.labels().begin(), b.labels().end());
    features.insert(features.end(), b.features().begin(), b.features().end());
  }
  CHECK(sizes == std::vector<std::size_t>{4, 4, 2});
  // Contents equal the source, in order.
  CHECK(labels == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(std::ranges::equal(features, ds.features()));
}

TEST_CASE("batch: drop_remainder drops the partial last batch") {
  const auto ds = make_dataset(10, 2);
  auto batches = ds | mo::data::batch(4, /*drop_remainder=*/true);
  CHECK(batches.size() == 2);
  std::vector<std::size_t> sizes;
  for (const auto& b : batches) sizes.push_back(b.size());
  CHECK(sizes == std::vector<std::size_t>{4, 4});

  // A source that divides evenly loses nothing either way.
  auto even = make_dataset(8, 2);
  CHECK((even | mo::data::batch(4, true)).size() == 2);
  CHECK((even | mo::data::batch(4)).size() == 2);
  CHECK(std::ranges::distance(even | mo::data::batch(4)) == 2);
}

TEST_CASE("batch: the batch storage is reused, within a pass and across passes") {
  const auto ds = make_dataset(100, 7);
  auto batches = ds | mo::data::batch(16);
  const float* first = nullptr;
  const std::int32_t* first_labels = nullptr;
  int seen = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& b : batches) {
      if (first == nullptr) {
        first = b.features().data();
        first_labels = b.labels().data();
      }
      CHECK(b.features().data() == first);
      CHECK(b.labels().data() == first_labels);
      ++seen;
    }
  }
  CHECK(seen == 2 * 7);
}

TEST_CASE("batch: it is lazy, reading nothing before iteration and only what is consumed") {
  static const std::vector<float> row{1.f, 2.f};
  int produced = 0;
  auto source = std::views::iota(0, 100) | std::views::transform([&produced](int i) {
                  ++produced;
                  return mo::data::Sample{row, i};
                });
  auto batches = source | mo::data::batch(8);
  CHECK(produced == 0);
  CHECK(batches.size() == 13);  // iota | transform is sized: no element is produced to count
  CHECK(produced == 0);

  auto it = batches.begin();
  CHECK(produced == 8);
  CHECK((*it).labels()[7] == 7);
  ++it;
  CHECK(produced == 16);
  CHECK((*it).labels()[0] == 8);

  // Leaving a loop after the first batch reads that batch and no more.
  produced = 0;
  for (const auto& b : source | mo::data::batch(32)) {
    CHECK(b.size() == 32);
    break;
  }
  CHECK(produced == 32);
}

TEST_CASE("batch: over a range of numbers each batch is a contiguous span of the values") {
  // The guide's tf.data.Dataset.range(1000).batch(32).
  auto batches = std::views::iota(0, 1000) | mo::data::batch(32);
  CHECK(batches.size() == 32);
  std::vector<std::size_t> sizes;
  std::vector<int> values;
  const int* storage = nullptr;
  for (std::span<const int> b : batches) {
    if (storage == nullptr) storage = b.data();
    CHECK(b.data() == storage);
    sizes.push_back(b.size());
    values.insert(values.end(), b.begin(), b.end());
  }
  CHECK(sizes.size() == 32);
  CHECK(sizes.front() == 32);
  CHECK(sizes.back() == 8);
  std::vector<int> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(values == expected);

  CHECK((std::views::iota(0, 1000) | mo::data::batch(32, true)).size() == 31);
  const std::vector<double> reals{0.5, 1.5, 2.5};
  auto by2 = mo::data::batch(reals, 2);
  auto it = by2.begin();
  CHECK((*it)[1] == 1.5);
  ++it;
  CHECK((*it).size() == 1);
  ++it;
  CHECK(it == std::default_sentinel);
}

TEST_CASE("batch: works over std::views, an input range, and the function-call form") {
  const auto ds = make_dataset(100, 4);
  std::vector<std::size_t> sizes;
  for (const auto& b : std::views::take(ds, 10) | mo::data::batch(4)) sizes.push_back(b.size());
  CHECK(sizes == std::vector<std::size_t>{4, 4, 2});

  auto called = mo::data::batch(ds, 25);
  CHECK(called.size() == 4);
  CHECK((*called.begin()).labels()[24] == 4);

  // A range that is not sized, and pure input: it still batches, it just has no size().
  auto odd = ds | std::views::filter([](const mo::data::Sample& s) { return s.label % 2 == 1; });
  static_assert(!std::ranges::sized_range<decltype(odd | mo::data::batch(8))>);
  std::size_t rows = 0;
  for (const auto& b : odd | mo::data::batch(8)) {
    for (std::int32_t label : b.labels()) CHECK(label % 2 == 1);
    rows += b.size();
  }
  CHECK(rows == 50);
}

TEST_CASE("batch: closures compose with other pipeable adaptors") {
  const auto ds = make_dataset(50, 2);
  const auto pipeline = first(10) | mo::data::batch(3);
  std::vector<std::size_t> sizes;
  for (const auto& b : ds | pipeline) sizes.push_back(b.size());
  CHECK(sizes == std::vector<std::size_t>{3, 3, 3, 1});
}

TEST_CASE("batch: a batch size of 0 or less raises memopt::error where it is written") {
  CHECK_THROWS_WITH_AS(mo::data::batch(0), doctest::Contains("expected a batch size > 0, found 0"),
                       mo::error);
  CHECK_THROWS_WITH_AS(std::views::iota(0, 3) | mo::data::batch(-2), doctest::Contains("found -2"),
                       mo::error);
}

TEST_CASE("batch: samples of different widths in one batch raise memopt::error") {
  static const std::vector<float> wide(3), narrow(2);
  std::vector<mo::data::Sample> samples{{wide, 0}, {wide, 1}, {narrow, 2}};
  auto batches = samples | mo::data::batch(3);
  CHECK_THROWS_WITH_AS(batches.begin(),
                       doctest::Contains("expected every sample to have 3 features (as the "
                                         "batch's first row), found 2 in row 2"),
                       mo::error);
}

TEST_CASE("AnyBatches: walks every batch by reference, and stops where the visitor says") {
  const mo::data::Dataset data = make_dataset(10, 3);
  auto batches = data | mo::data::batch(4);  // 4, 4 and 2 rows
  const mo::data::AnyBatches any(std::ranges::ref_view{batches});

  std::vector<std::size_t> rows;
  std::vector<float> first_features;
  any.for_each([&](const mo::data::BatchRef& b) {
    rows.push_back(b.size());
    first_features.push_back(b.features().front());
    CHECK(b.width() == 3);
  });
  CHECK(rows == std::vector<std::size_t>{4, 4, 2});
  CHECK(first_features == std::vector<float>{0, 400, 800});

  // A visitor that returns bool stops the walk at the first false.
  rows.clear();
  any.for_each([&](const mo::data::BatchRef& b) {
    rows.push_back(b.size());
    return rows.size() < 2;
  });
  CHECK(rows == std::vector<std::size_t>{4, 4});

  // A visitor of float rows meets float targets: memopt::error, not a misread.
  const mo::data::AnyBatches targets =
      mo::data::from(std::vector<float>{1, 2, 3, 4}, std::vector<float>{0, 1}, 2, 1) |
      mo::data::batch(2);
  CHECK_THROWS_WITH_AS(targets.for_each([](const mo::data::BatchRef&) {}),
                       doctest::Contains("found float targets"), mo::error);
}
