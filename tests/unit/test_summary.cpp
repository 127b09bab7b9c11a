// summary() says which batch its arena is for (issue 13, item 9): the batch asked for, else
// the one fit prepared, else 32 (said to be the default); and fit's too when it differs.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>

#include <memopt/memopt.hpp>

#include "blobs.hpp"

namespace mo = memopt;

namespace {

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
using M = mo::Model<Net, mo::Input<8>>;

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string arena_line(std::size_t batch) {
  return "training   " + std::string(12 - std::to_string(M::arena_bytes(batch)).size(), ' ') +
         std::to_string(M::arena_bytes(batch)) + " bytes";
}

}  // namespace

TEST_CASE("before any fit, summary reports batch 32 and says it is the default") {
  M model{1};
  const std::string s = model.summary_string();
  CHECK(has(s, "Arena at batch 32 (the default, 32: no fit yet"));
  CHECK(has(s, arena_line(32)));
  CHECK_FALSE(has(s, "the batch fit prepared"));
}

TEST_CASE("after fit at 64, summary reports the arena fit prepared") {
  M model{1};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  const auto train = mo::testing::blobs(128, 2);
  model.fit(train | mo::data::batch(64), {.verbose = 0});
  REQUIRE(model.executor().capacity() == 64);

  const std::string s = model.summary_string();
  CHECK(has(s, "Arena at batch 64 (the batch fit prepared)"));
  CHECK(has(s, arena_line(64)));
  CHECK_FALSE(has(s, "Arena at batch 32"));

  // Asked for another batch: that one first, and fit's as well.
  const std::string asked = model.summary_string(256);
  CHECK(has(asked, "Arena at batch 256 (asked for)"));
  CHECK(has(asked, arena_line(256)));
  CHECK(has(asked, "Arena at batch 64 (the batch fit prepared)"));
  CHECK(asked.find("batch 256") < asked.find("batch 64"));

  // Asked for fit's own batch: reported once.
  const std::string same = model.summary_string(64);
  CHECK(has(same, "Arena at batch 64 (asked for; fit prepared this batch)"));
  CHECK(same.find("Arena at batch 64") == same.rfind("Arena at batch 64"));
}

TEST_CASE("summary's columns widen for long layer names, so every row stays aligned") {
  using Cnn = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::GlobalAveragePooling2D, mo::Dense<3, mo::Softmax>>;
  using Spec = mo::Model<Cnn, mo::Input<6, 6, 2>>::spec;
  const std::string s = mo::format_summary<Spec>("cpu", 32);
  REQUIRE(has(s, "batch_normalization_1 (BatchNormalization)"));

  // Each layer row, and the header, has its output shape ("(None" / "Output Shape") at the
  // same column, after at least one space.
  const std::size_t header = s.find("Layer (type)");
  const std::size_t column = s.find("Output Shape", header) - s.rfind('\n', header) - 1;
  int rows = 0;
  for (std::size_t at = s.find('\n'); at != std::string::npos; at = s.find('\n', at + 1)) {
    const std::string line = s.substr(at + 1, s.find('\n', at + 1) - at - 1);
    const std::size_t shape = line.find("(None");
    if (shape == std::string::npos || line.starts_with("  ")) continue;
    ++rows;
    CHECK_MESSAGE(shape == column, line);
    CHECK_MESSAGE(line[shape - 1] == ' ', line);
  }
  CHECK(rows == 6);
  // The fused-kernel table keeps its third column aligned too.
  const std::size_t bn = s.find("  forward   batch_normalization_1 ");
  const std::size_t dense = s.find("  forward   dense ");
  REQUIRE(bn != std::string::npos);
  REQUIRE(dense != std::string::npos);
  const auto ops_column = [&s](std::size_t row) {
    return s.find_first_not_of(' ', s.find(' ', row + 12)) - row;
  };
  CHECK(ops_column(bn) == ops_column(dense));
}

TEST_CASE("after compile, summary names the loss in the last kernel and the optimizer's state") {
  M model;
  REQUIRE(has(model.summary_string(), "then the loss + gradient + metrics"));
  REQUIRE(has(model.summary_string(), "optimizer state (Adam, until compile)"));
  model.compile(mo::SGD{}, mo::CategoricalCrossentropy{});
  const std::string s = model.summary_string();
  CHECK(has(s, "then categorical_crossentropy + gradient + metrics"));
  // Plain SGD keeps no state per parameter.
  CHECK(has(s, "optimizer state (sgd) 0 B"));
}
