// data::prefetch and data::map(fn, threads): worker threads, a bounded queue of pooled slots,
// errors at their element, early exit without deadlock. These tests also run under
// ThreadSanitizer (scripts/test.sh, build-tsan).

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <ranges>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/autotune.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/generate.hpp"
#include "memopt/data/map.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/data/take.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/losses.hpp"
#include "memopt/train/metrics.hpp"
#include "memopt/train/optimizers.hpp"

namespace mo = memopt;
using namespace std::chrono_literals;

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

// Waits (up to 10 s) until `pred` holds; false if it never does.
template <class P>
bool eventually(P pred) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// `n` samples of width 3: sample i holds (i, 2i, 3i), label i.
mo::data::Dataset numbered(int n) {
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < n; ++i) {
    for (int j = 1; j <= 3; ++j) features.push_back(float(i * j));
    labels.push_back(i);
  }
  return mo::data::from(std::move(features), std::move(labels), 3);
}

}  // namespace

using Prefetched = decltype(mo::data::range(10) | mo::data::prefetch(2));
static_assert(std::ranges::view<Prefetched> && std::ranges::input_range<Prefetched>);
static_assert(std::ranges::sized_range<Prefetched>);
static_assert(std::same_as<std::ranges::range_reference_t<Prefetched>, int&>);
static_assert(!std::copy_constructible<std::ranges::iterator_t<Prefetched>>);
using PrefetchedBatches = decltype(std::declval<mo::data::Dataset&>() | mo::data::shuffle(10, 1) |
                                   mo::data::batch(4) | mo::data::prefetch(mo::data::autotune));
static_assert(mo::data::LabeledBatch<std::ranges::range_reference_t<PrefetchedBatches>>);
static_assert(std::ranges::sized_range<PrefetchedBatches>);

TEST_CASE("prefetch: the same elements in the same order, pass after pass") {
  auto ahead = mo::data::range(1000) | mo::data::prefetch(4);
  CHECK(ahead.size() == 1000);
  CHECK(pass(ahead) == iota_vector(1000));
  CHECK(pass(ahead) == iota_vector(1000));
  auto tuned = mo::data::range(1000) | mo::data::prefetch(mo::data::autotune);
  CHECK(pass(tuned) == iota_vector(1000));
  auto empty = mo::data::range(0) | mo::data::prefetch(1);
  CHECK(pass(empty).empty());
}

TEST_CASE("prefetch: batches of a dataset arrive whole, and slots are reused") {
  const auto ds = numbered(100);
  auto batches = ds | mo::data::batch(8) | mo::data::prefetch(2);
  CHECK(batches.size() == 13);
  std::set<const float*> storage;
  for (int epoch = 0; epoch < 3; ++epoch) {
    int next = 0;
    for (const mo::data::Batch& b : batches) {
      storage.insert(b.features().data());
      for (std::size_t r = 0; r < b.size(); ++r) {
        CHECK(b[r].label == next);
        CHECK(b[r].features[2] == float(3 * next));
        ++next;
      }
    }
    CHECK(next == 100);
  }
  // A depth of 2 needs 3 slots (two ahead, one in use): no batch is allocated per step.
  CHECK(storage.size() <= 3);
}

TEST_CASE("prefetch: lazy, and the queue is bounded by the depth") {
  std::atomic<int> produced{0};
  auto counted = mo::data::range(1000) | std::views::transform([&produced](int i) {
                   produced.fetch_add(1);
                   return i;
                 });
  auto ahead = counted | mo::data::prefetch(3);
  std::this_thread::sleep_for(5ms);
  CHECK(produced.load() == 0);  // nothing before begin()
  {
    auto it = ahead.begin();
    CHECK(*it == 0);
    // One element in use and three ahead, then the worker waits.
    CHECK(eventually([&] { return produced.load() == 4; }));
    std::this_thread::sleep_for(20ms);
    CHECK(produced.load() == 4);
    ++it;
    CHECK(*it == 1);
    CHECK(eventually([&] { return produced.load() == 5; }));
  }
  // The iterator is gone: the pass is over and the worker reads nothing more.
  const int after = produced.load();
  std::this_thread::sleep_for(20ms);
  CHECK(produced.load() == after);
}

TEST_CASE("prefetch: an exception upstream is rethrown at its element, after those before it") {
  auto failing = mo::data::range(100) | std::views::transform([](int i) {
                   if (i == 5) throw std::runtime_error("bad element 5");
                   return i;
                 });
  auto ahead = failing | mo::data::prefetch(4);
  for (int attempt = 0; attempt < 2; ++attempt) {  // a pass after a failed one starts afresh
    std::vector<int> got;
    try {
      for (int x : ahead) got.push_back(x);
      FAIL("expected an exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "bad element 5");
    }
    CHECK(got == std::vector<int>{0, 1, 2, 3, 4});
  }

  // At the first element, begin() throws.
  auto first = mo::data::range(10) | std::views::transform([](int i) -> int {
                 throw std::runtime_error("bad element " + std::to_string(i));
               }) |
               mo::data::prefetch(2);
  CHECK_THROWS_WITH_AS(first.begin(), "bad element 0", std::runtime_error);
}

TEST_CASE("prefetch: an error while moving upstream past element k belongs to element k + 1") {
  // batch(2) reads the second batch when moving past the first; its rows differ in width.
  static const std::vector<float> wide(3), narrow(2);
  std::vector<mo::data::Sample> samples{{wide, 0}, {wide, 1}, {wide, 2}, {narrow, 3}};
  auto ahead = samples | mo::data::batch(2) | mo::data::prefetch(2);
  auto it = ahead.begin();
  CHECK((*it).labels()[1] == 1);
  CHECK_THROWS_WITH_AS(++it, doctest::Contains("found 2 in row 1"), mo::error);
  CHECK(it == std::default_sentinel);
}

TEST_CASE("prefetch: leaving a loop early stops the worker, without deadlock") {
  std::atomic<int> produced{0};
  auto endless = mo::data::generate([&produced] { return produced.fetch_add(1); });
  auto ahead = endless | mo::data::prefetch(8);

  int seen = 0;
  for (int x : ahead) {
    CHECK(x == seen);
    if (++seen == 3) break;
  }
  const int after_break = produced.load();
  CHECK(after_break <= 3 + 8 + 1);
  std::this_thread::sleep_for(20ms);
  CHECK(produced.load() == after_break);

  // An exception thrown by the loop's body ends the pass the same way.
  try {
    for (int x : ahead) {
      if (x > after_break + 2) throw std::runtime_error("consumer gave up");
    }
  } catch (const std::runtime_error&) {
  }
  const int after_throw = produced.load();
  std::this_thread::sleep_for(20ms);
  CHECK(produced.load() == after_throw);

  // std::views::take over a prefetch stops it after n elements.
  auto five = mo::data::range(1'000'000) | mo::data::prefetch(2) | std::views::take(5);
  CHECK(pass(five) == iota_vector(5));

  // Nested stages: ending the outer pass ends the inner one.
  std::atomic<int> inner{0};
  auto twice = mo::data::generate([&inner] { return inner.fetch_add(1); }) | mo::data::prefetch(2) |
               mo::data::prefetch(2);
  for (int x : twice) {
    if (x == 10) break;
  }
  const int inner_after = inner.load();
  std::this_thread::sleep_for(20ms);
  CHECK(inner.load() == inner_after);
}

TEST_CASE("prefetch: destroying the view mid-pass, or before any pass, joins cleanly") {
  { auto never = mo::data::range(10) | mo::data::prefetch(2); }
  const auto one = [] { return 1; };
  auto endless = std::make_unique<decltype(mo::data::generate(one) | mo::data::prefetch(4))>(
      mo::data::generate(one) | mo::data::prefetch(4));
  {
    auto it = endless->begin();
    CHECK(*it == 1);
  }
  // Fails by hanging (ctest's timeout) or by a ThreadSanitizer report, not by an assertion.
  endless.reset();
}

TEST_CASE("prefetch: a new begin() ends the previous pass; its iterator then reads as ended") {
  auto ahead = mo::data::range(10) | mo::data::prefetch(2);
  auto first = ahead.begin();
  CHECK(*first == 0);
  auto second = ahead.begin();
  CHECK(*second == 0);
  ++first;
  CHECK(first == std::default_sentinel);
  ++second;
  CHECK(*second == 1);
}

TEST_CASE("prefetch: move-only elements are moved into the queue and out again") {
  int n = 0;
  auto boxes = mo::data::generate([&n] { return std::make_unique<int>(n++); }) |
               mo::data::take(50) | mo::data::prefetch(3);
  std::vector<std::unique_ptr<int>> kept;
  for (auto& p : boxes) kept.push_back(std::move(p));
  REQUIRE(kept.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(*kept[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("prefetch(autotune): grows while the consumer waits on a held-back worker") {
  // A bursty producer: fast, except a 30 ms stall every 20 elements. The consumer takes 2 ms
  // per element, so the worker runs ahead (held back by the depth), then the stall drains the
  // queue and the consumer waits: a deeper queue would have hidden the stall.
  auto bursty = mo::data::range(120) | std::views::transform([](int i) {
                  if (i % 20 == 19) std::this_thread::sleep_for(30ms);
                  return i;
                });
  auto tuned = bursty | mo::data::prefetch(mo::data::autotune);
  int next = 0;
  for (int x : tuned) {
    CHECK(x == next++);
    std::this_thread::sleep_for(2ms);
  }
  CHECK(tuned.depth() > 2);
  CHECK(tuned.depth() <= mo::data::autotune.max_depth);

  // A lower max_depth stops it there.
  auto shallow = bursty | mo::data::prefetch(mo::data::Autotune{.max_depth = 2});
  for (int x : shallow) {
    (void)x;
    std::this_thread::sleep_for(2ms);
  }
  CHECK(shallow.depth() == 2);

  // A producer that is simply slower gains nothing from depth: it stays at 1.
  auto slow = mo::data::range(20) | std::views::transform([](int i) {
                std::this_thread::sleep_for(2ms);
                return i;
              });
  auto steady = slow | mo::data::prefetch(mo::data::autotune);
  CHECK(pass(steady) == iota_vector(20));
  CHECK(steady.depth() == 1);
}

TEST_CASE("prefetch(autotune): the memory cap bounds the depth") {
  // The bursts of the test above, with elements of 4 KiB and a cap of three elements: three
  // slots, one in use and a depth of at most two.
  auto bursty = mo::data::range(120) | std::views::transform([](int i) {
                  if (i % 20 == 19) std::this_thread::sleep_for(30ms);
                  return std::vector<float>(1024, float(i));
                });
  const std::size_t element = sizeof(std::vector<float>) + 1024 * sizeof(float);
  auto capped = bursty | mo::data::prefetch(mo::data::Autotune{.memory_cap = 3 * element});
  int next = 0;
  for (const std::vector<float>& v : capped) {
    CHECK(v[0] == float(next++));
    std::this_thread::sleep_for(2ms);
  }
  CHECK(capped.depth() <= 2);
  CHECK_THROWS_WITH_AS(mo::data::prefetch(mo::data::Autotune{.memory_cap = 0}),
                       doctest::Contains("memory cap > 0"), mo::error);
  CHECK_THROWS_WITH_AS(mo::data::prefetch(mo::data::Autotune{.max_depth = 0}),
                       doctest::Contains("max_depth > 0"), mo::error);
}

TEST_CASE("prefetch(autotune): its slots are reserved at the first element and then reused") {
  const auto ds = numbered(640);
  auto tuned = ds | mo::data::batch(8) | mo::data::prefetch(mo::data::autotune);
  std::set<const float*> storage;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const mo::data::Batch& b : tuned) storage.insert(b.features().data());
  }
  // Whatever depth it reached, batches cycle through at most max_depth + 1 slots.
  CHECK(storage.size() <= mo::data::autotune.max_depth + 1);
}

TEST_CASE("prefetch: a depth of 0 or less raises memopt::error where it is written") {
  CHECK_THROWS_WITH_AS(mo::data::prefetch(0), doctest::Contains("expected a depth > 0"), mo::error);
  CHECK_THROWS_AS(mo::data::range(3) | mo::data::prefetch(-1), mo::error);
}

TEST_CASE("map(fn, threads): results in upstream order whatever finishes first") {
  auto uneven = mo::data::range(200) | mo::data::map(
                                           [](int i) {
                                             // Later elements often finish first.
                                             if (i % 7 == 0) std::this_thread::sleep_for(1ms);
                                             return i * i;
                                           },
                                           4);
  CHECK(uneven.size() == 200);
  for (int p = 0; p < 2; ++p) {
    const auto got = pass(uneven);
    REQUIRE(got.size() == 200);
    for (int i = 0; i < 200; ++i) CHECK(got[static_cast<std::size_t>(i)] == i * i);
  }
  auto cores = mo::data::range(50) | mo::data::map([](int i) { return -i; }, mo::data::autotune);
  int next = 0;
  for (int x : cores) CHECK(x == -next++);
  CHECK(next == 50);
}

TEST_CASE("map(fn, threads): an exception from fn is rethrown at its element") {
  auto failing = mo::data::range(100) | mo::data::map(
                                            [](int i) {
                                              if (i == 7)
                                                throw std::runtime_error("fn failed at 7");
                                              return i;
                                            },
                                            3);
  std::vector<int> got;
  CHECK_THROWS_WITH_AS(
      [&] {
        for (int x : failing) got.push_back(x);
      }(),
      "fn failed at 7", std::runtime_error);
  CHECK(got == iota_vector(7));
  CHECK_THROWS_WITH_AS(mo::data::map([](int i) { return i; }, 0),
                       doctest::Contains("number of threads > 0"), mo::error);
}

TEST_CASE("map(fn, threads): decode-like work on samples, then batch and prefetch") {
  const auto ds = numbered(64);
  auto doubled = ds | mo::data::map(
                          [](const mo::data::Sample& s) {
                            std::vector<float> twice(s.features.begin(), s.features.end());
                            for (float& f : twice) f *= 2;
                            return std::pair(std::move(twice), s.label);
                          },
                          2);
  int next = 0;
  for (auto& [features, label] : doubled) {
    CHECK(label == next);
    CHECK(features[1] == float(4 * next));
    ++next;
  }
  CHECK(next == 64);
}

TEST_CASE("fit trains on shuffle | batch | prefetch(autotune)") {
  // Two separable classes in 2-D.
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  mo::Rng rng{3};
  for (int i = 0; i < 256; ++i) {
    const int c = i % 2;
    features.push_back(rng.uniform(-1.0f, 1.0f) + (c ? 3.0f : -3.0f));
    features.push_back(rng.uniform(-1.0f, 1.0f));
    labels.push_back(c);
  }
  const auto train = mo::data::from(std::move(features), std::move(labels), 2);
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<2, mo::Softmax>>;
  mo::Model<Net, mo::Input<2>> model{5};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  auto batches = train | mo::data::shuffle(256, 1) | mo::data::batch(32) |
                 mo::data::prefetch(mo::data::autotune);
  const auto history = model.fit(batches, {.epochs = 3, .verbose = 0});
  CHECK(history.last("accuracy") > 0.9);
  const auto e = model.evaluate(train | mo::data::batch<64>() | mo::data::prefetch(2));
  CHECK(e.accuracy > 0.9);
}
