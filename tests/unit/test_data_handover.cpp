// Elements that cross to another thread, or wait in a buffer, are owned by the adaptor that
// keeps them. `batch(n)` over numbers yields a span into a buffer it refills; an adaptor that
// kept the span (prefetch's slot, a parallel map's input, shuffle's or cache's buffer) would hand
// out values that upstream has since overwritten. The table below runs every composition of the
// keeping adaptors over numbers, floats, labelled samples and 8-bit images and compares each
// pass with the same pipeline read one element at a time. These tests also run under
// ThreadSanitizer (scripts/test.sh, build-tsan), which sees a worker refilling a buffer that the
// consumer reads.

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "memopt/data/autotune.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/cache.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/from.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/data/image_dataset.hpp"
#include "memopt/data/map.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/shuffle.hpp"

namespace mo = memopt;
namespace md = memopt::data;

namespace {

// Every value an element carries, in order, as doubles: what two pipelines must agree on.
void append(std::vector<double>& out, double v) {
  out.push_back(v);
}

template <class E>
void append(std::vector<double>& out, const E& e) {
  if constexpr (std::is_arithmetic_v<E>) {
    out.push_back(static_cast<double>(e));
  } else if constexpr (md::LabeledPixelBatch<E>) {
    for (std::uint8_t p : e.pixels()) out.push_back(p);
    for (std::int32_t l : e.labels()) out.push_back(l);
  } else if constexpr (md::LabeledBatch<E>) {
    for (float f : e.features()) out.push_back(f);
    for (std::int32_t l : e.labels()) out.push_back(l);
  } else if constexpr (std::same_as<E, md::Sample>) {
    for (float f : e.features) out.push_back(f);
    out.push_back(e.label);
  } else if constexpr (std::same_as<E, md::ImageView>) {
    for (std::uint8_t p : e.pixels) out.push_back(p);
    out.push_back(e.label);
  } else {
    static_assert(std::ranges::input_range<const E&>, "append: an element type to add");
    for (const auto& v : e) append(out, v);
    out.push_back(-1.0);  // keeps element boundaries: {1, 2}, {3} differs from {1}, {2, 3}
  }
}

// One pass, flattened.
template <class R>
std::vector<double> read(R& range) {
  std::vector<double> out;
  for (const auto& e : range) append(out, e);
  return out;
}

// Three passes of `pipeline(source)` against three of `reference(source)`; shuffles reshuffle
// per pass in both, so the passes differ from each other and still agree pass by pass.
template <class Source, class Reference, class Pipeline>
void check_agrees(const Source& source, Reference reference, Pipeline pipeline) {
  auto expected = reference(source);
  auto actual = pipeline(source);
  for (int pass = 0; pass < 3; ++pass) {
    CAPTURE(pass);
    const std::vector<double> want = read(expected);
    REQUIRE(!want.empty());
    CHECK(read(actual) == want);
  }
}

// Sources: each returns a fresh view, so that reference and pipeline do not share state.
auto numbers() {
  return md::range(1000);
}

std::vector<float> float_values() {
  std::vector<float> v(777);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * float(i) - 3.0f;
  return v;
}

md::Dataset samples() {
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 300; ++i) {
    for (int j = 1; j <= 4; ++j) features.push_back(float(i * j) + 0.5f);
    labels.push_back(i % 10);
  }
  return md::from(std::move(features), std::move(labels), 4);
}

md::ImageDataset images() {
  const std::size_t n = 200, h = 3, w = 2, c = 2;
  std::vector<std::uint8_t> pixels(n * h * w * c);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::uint8_t((i * 7 + 3) % 251);
  std::vector<std::int32_t> labels(n);
  for (std::size_t i = 0; i < n; ++i) labels[i] = std::int32_t(i % 5);
  return md::ImageDataset(std::move(pixels), std::move(labels), h, w, c);
}

// A copy of a batch's values, as a parallel map's function might produce from its input.
struct Sum {
  template <class E>
  double operator()(const E& e) const {
    std::vector<double> v;
    append(v, e);
    return std::accumulate(v.begin(), v.end(), 0.0);
  }
};

}  // namespace

// The types the keeping adaptors hand out: owning copies of borrowed spans and string views.
static_assert(md::detail::BorrowedElement<std::span<const int>>);
static_assert(md::detail::BorrowedElement<std::string_view>);
static_assert(!md::detail::BorrowedElement<std::vector<int>>);
static_assert(!md::detail::BorrowedElement<decltype(std::views::iota(0, 3))>);
static_assert(!md::detail::BorrowedElement<md::Sample>);  // views storage its source keeps
static_assert(std::same_as<md::detail::owned_t<std::string_view>, std::string>);
static_assert(std::same_as<
              std::ranges::range_value_t<decltype(md::range(10) | md::batch(3) | md::prefetch(2))>,
              std::vector<int>>);
static_assert(
    std::same_as<
        std::ranges::range_value_t<decltype(md::range(10) | md::batch(3) | md::shuffle(4, 1))>,
        std::vector<int>>);

TEST_CASE(
    "range(1000) | batch(32) | prefetch(...): every number once, in order (the guide's "
    "pipeline)") {
  for (bool tuned : {false, true}) {
    CAPTURE(tuned);
    auto run = [&](auto&& batches) {
      long long sum = 0;
      int next = 0;
      bool in_order = true;
      for (std::span<const int> b : batches) {
        for (int v : b) {
          sum += v;
          in_order = in_order && v == next++;
        }
      }
      CHECK(sum == 499'500);
      CHECK(in_order);
      CHECK(next == 1000);
    };
    if (tuned) {
      run(md::range(1000) | md::batch(32) | md::prefetch(md::autotune));
    } else {
      run(md::range(1000) | md::batch(32) | md::prefetch(2));
    }
  }
}

TEST_CASE(
    "keeping adaptors over batches of numbers, floats, samples and images agree with "
    "the sequential pipeline") {
  // Each row: a pipeline over batches, and the reference it must equal (the same pipeline
  // with the keeping adaptor left out, or with its threads left out).
  const auto table = [&](const auto& source) {
    using S = std::remove_cvref_t<decltype(source)>;
    SUBCASE("batch | prefetch(2)") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(32); },
          [](const S& s) { return md::from(S(s)) | md::batch(32) | md::prefetch(2); });
    }
    SUBCASE("batch | prefetch(autotune)") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(17); },
          [](const S& s) { return md::from(S(s)) | md::batch(17) | md::prefetch(md::autotune); });
    }
    SUBCASE("prefetch | batch") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(32); },
          [](const S& s) { return md::from(S(s)) | md::prefetch(3) | md::batch(32); });
    }
    SUBCASE("batch | shuffle | prefetch") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(8) | md::shuffle(5, 7); },
          [](const S& s) {
            return md::from(S(s)) | md::batch(8) | md::shuffle(5, 7) | md::prefetch(2);
          });
    }
    SUBCASE("shuffle | batch | prefetch") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::shuffle(64, 3) | md::batch(16); },
          [](const S& s) {
            return md::from(S(s)) | md::shuffle(64, 3) | md::batch(16) | md::prefetch(4);
          });
    }
    SUBCASE("batch | cache, replayed") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(10); },
          [](const S& s) { return md::from(S(s)) | md::batch(10) | md::cache(); });
    }
    SUBCASE("batch | cache | prefetch") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(10); },
          [](const S& s) {
            return md::from(S(s)) | md::batch(10) | md::cache() | md::prefetch(2);
          });
    }
    SUBCASE("batch | map(fn, 3 threads)") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(9) | md::map(Sum{}); },
          [](const S& s) { return md::from(S(s)) | md::batch(9) | md::map(Sum{}, 3); });
    }
    SUBCASE("batch | map(identity, 2 threads) | prefetch") {
      check_agrees(
          source, [](const S& s) { return md::from(S(s)) | md::batch(9); },
          [](const S& s) {
            return md::from(S(s)) | md::batch(9) |
                   md::map([](const auto& b) -> decltype(auto) { return b; }, 2) | md::prefetch(2);
          });
    }
  };

  SUBCASE("numbers") {
    const std::vector<int> v = [] {
      std::vector<int> x;
      for (int i : numbers()) x.push_back(i);
      return x;
    }();
    table(v);
  }
  SUBCASE("floats") {
    table(float_values());
  }
  SUBCASE("labelled samples") {
    table(samples());
  }
  SUBCASE("8-bit images") {
    table(images());
  }
}

TEST_CASE("a parallel map's function reads its own copy of a span, while upstream refills") {
  // The input of map(fn, threads) is read by fn after upstream has moved on to the next batch.
  std::vector<long long> sums;
  for (long long s : md::range(1000) | md::batch(50) |
                         md::map(
                             [](std::span<const int> b) {
                               // Long enough for the other worker to read the next batch meanwhile.
                               std::this_thread::sleep_for(std::chrono::milliseconds(2));
                               return std::accumulate(b.begin(), b.end(), 0LL);
                             },
                             2)) {
    sums.push_back(s);
  }
  REQUIRE(sums.size() == 20);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const long long first = 50LL * static_cast<long long>(i);
    CHECK(sums[i] == 50 * first + 49 * 50 / 2);
  }
}

TEST_CASE("a function that returns a view of its input hands out an owning copy") {
  // The result lives in a slot; a string view into the worker's input would dangle when the
  // worker takes the next element.
  const std::vector<std::string> words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"};
  std::vector<std::string> out;
  for (const std::string& w :
       md::from(words) | md::map([](const std::string& s) { return std::string(s) + "!"; }) |
           md::map([](const std::string& s) { return std::string_view(s).substr(1); }, 2)) {
    out.push_back(w);
  }
  CHECK(out == std::vector<std::string>{"lpha!", "eta!", "amma!", "elta!", "psilon!", "eta!"});
}
