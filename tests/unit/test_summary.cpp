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
