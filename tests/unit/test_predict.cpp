// predict as Keras users call it (issue 13, item 8): on a range of batches (labels ignored),
// on one sample, and on rows of floats, with the same outputs row after row.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

#include "blobs.hpp"

namespace mo = memopt;

namespace {

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
using M = mo::Model<Net, mo::Input<8>>;

// Rows of `b` from row `first`, `rows` of them.
std::vector<float> rows_of(const std::vector<float>& all, std::size_t first, std::size_t rows) {
  return {all.begin() + static_cast<std::ptrdiff_t>(first * 4),
          all.begin() + static_cast<std::ptrdiff_t>((first + rows) * 4)};
}

}  // namespace

TEST_CASE("predict on a range of batches returns every row's outputs, row after row") {
  M model{5};
  const auto data = mo::testing::blobs(23, 11);
  const std::vector<float> reference = model.predict(data.features());
  REQUIRE(reference.size() == 23 * 4);

  // 23 rows in batches of 5: four full batches and one of 3, labels ignored.
  const std::vector<float> batched = model.predict(data | mo::data::batch(5));
  REQUIRE(batched.size() == reference.size());
  for (std::size_t i = 0; i < reference.size(); ++i)
    CHECK(batched[i] == doctest::Approx(reference[i]).epsilon(1e-6));

  // A pipeline, as in fit: shuffled batches come back in the pipeline's order.
  const std::vector<float> shuffled =
      model.predict(data | mo::data::shuffle(23, 3) | mo::data::batch(4) | mo::data::prefetch(2));
  CHECK(shuffled.size() == reference.size());
  CHECK(shuffled != batched);

  // An empty range gives no outputs.
  const auto none = mo::testing::blobs(0, 1);
  CHECK(model.predict(none | mo::data::batch(5)).empty());
}

TEST_CASE("predict on one sample returns that sample's outputs") {
  M model{5};
  const auto data = mo::testing::blobs(10, 12);
  const std::vector<float> all = model.predict(data.features());
  for (std::size_t r : {std::size_t{0}, std::size_t{7}}) {
    const std::vector<float> one = model.predict(data[r]);
    REQUIRE(one.size() == 4);
    const std::vector<float> expected = rows_of(all, r, 1);
    for (std::size_t u = 0; u < 4; ++u) CHECK(one[u] == doctest::Approx(expected[u]).epsilon(1e-6));
  }
}

TEST_CASE("predict refuses a sample or a batch of the wrong width, saying both widths") {
  M model{5};
  const std::vector<float> three{1.0f, 2.0f, 3.0f};
  CHECK_THROWS_WITH_AS(model.predict(mo::data::Sample{three, 0}),
                       doctest::Contains("the model's Input has 8 features, the sample has 3"),
                       mo::error);
  const auto narrow = mo::data::from(std::vector<float>(6, 0.5f), {0, 1}, 3);
  CHECK_THROWS_WITH_AS(model.predict(narrow | mo::data::batch(2)),
                       doctest::Contains("the model's Input has 8 features, the batch has 3"),
                       mo::error);
}
