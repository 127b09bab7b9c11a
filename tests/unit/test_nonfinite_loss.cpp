// A NaN or inf loss: found at the step where it first appears (issue 13, item 4), reported
// with the value found ("inf", never "-nan"), and, with `.terminate_on_nan`, stopping fit at
// that step instead of the end of the epoch.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

// One Linear layer, 2 inputs -> 4 logits, whose kernel sends x0 to +x0 on logit 0 and -x0 on
// logit 1 (everything else zero): a row (x0, 0) labelled 1 costs log(sum) + x0 - (-x0) =
// 2 x0, which for x0 = 3e38 overflows float to inf, while rows (1, 0) cost about 0.3.
using Logits = mo::Sequential<mo::Dense<4>>;
using LogitsModel = mo::Model<Logits, mo::Input<2>>;

LogitsModel overflowing_model() {
  LogitsModel model{1};
  model.compile(mo::SGD{{.learning_rate = 1e-3}},
                mo::SparseCategoricalCrossentropy{{.from_logits = true}});
  std::vector<float> w(LogitsModel::parameter_count, 0.0f);  // kernel [2, 4], then bias [4]
  w[0] = 1.0f;
  w[1] = -1.0f;
  model.set_weights(w);
  REQUIRE(model.predict(std::vector<float>{2.0f, 0.0f}) ==
          std::vector<float>{2.0f, -2.0f, 0.0f, 0.0f});
  return model;
}

// Eight batches of one row; the third (step 3, index 2) has the overflowing row.
mo::data::Dataset third_row_overflows() {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (int r = 0; r < 8; ++r) {
    x.push_back(r == 2 ? 3e38f : 1.0f);
    x.push_back(0.0f);
    y.push_back(r == 2 ? 1 : 0);
  }
  return mo::data::from(std::move(x), std::move(y), 2);
}

struct CountBatches : mo::Callback {
  int ended = 0;
  void on_train_batch_end(int, const mo::BatchLogs&) override { ++ended; }
};

std::string fit_error(LogitsModel& model, const mo::FitOptions& options) {
  const auto data = third_row_overflows();
  try {
    model.fit(data | mo::data::batch(1), options);
  } catch (const mo::error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("format_loss writes what was found: nan without a sign, inf, -inf, numbers") {
  CHECK(mo::train::format_loss(-not_a_number) == "nan");
  CHECK(mo::train::format_loss(not_a_number) == "nan");
  CHECK(mo::train::format_loss(inf) == "inf");
  CHECK(mo::train::format_loss(-inf) == "-inf");
  CHECK(mo::train::format_loss(0.25) == "0.25");
}

TEST_CASE("NonfiniteLossWatch keeps the first step whose loss is not finite, and its value") {
  mo::train::NonfiniteLossWatch watch;
  CHECK_FALSE(watch.observe(0, 1.5, 2));
  CHECK_FALSE(watch.observe(1, 2.5, 4));
  CHECK_FALSE(watch.first().has_value());
  CHECK(watch.observe(2, inf, 6));  // step 2's own loss: (inf - 2.5) / 2 rows
  CHECK_FALSE(
      watch.observe(3, not_a_number, 8));  // later steps turn the sum into nan: still step 2
  REQUIRE(watch.first().has_value());
  CHECK(watch.first()->step == 2);
  CHECK(mo::train::format_loss(watch.first()->loss) == "inf");

  watch.begin_epoch();
  CHECK_FALSE(watch.first().has_value());
  CHECK(watch.observe(0, not_a_number, 3));
  CHECK(watch.first()->step == 0);
}

TEST_CASE("without terminate_on_nan the epoch ends, then the error names the first bad step") {
  LogitsModel model = overflowing_model();
  CountBatches count;
  const std::string e = fit_error(model, {.callbacks = {&count}, .verbose = 0});
  CHECK(count.ended == 8);  // the whole epoch ran
  CHECK(e.find("the loss is ") != std::string::npos);
  CHECK(e.find("at epoch 1") != std::string::npos);
  CHECK(e.find("it was first inf, at step 3") != std::string::npos);
  CHECK(e.find("-nan") == std::string::npos);
}

TEST_CASE("terminate_on_nan stops fit at the step whose loss is first not finite") {
  LogitsModel model = overflowing_model();
  CountBatches count;
  const std::string e = fit_error(
      model, {.epochs = 3, .callbacks = {&count}, .verbose = 0, .terminate_on_nan = true});
  CHECK(count.ended == 2);  // steps 1 and 2 ended; step 3 raised before its callbacks
  CHECK(e.find("the loss is inf at epoch 1, step 3") != std::string::npos);
  CHECK(e.find("training stopped there (terminate_on_nan)") != std::string::npos);
  CHECK(model.iterations() == 3);  // the bad step's update ran; none after it

  // A fresh fit after the error starts from clean totals: finite data trains without error.
  std::vector<float> x(16, 1.0f);
  for (std::size_t i = 1; i < x.size(); i += 2) x[i] = 0.0f;
  const auto finite = mo::data::from(std::move(x), std::vector<std::int32_t>(8, 0), 2);
  model.set_weights(overflowing_model().get_weights());
  const mo::History h =
      model.fit(finite | mo::data::batch(2), {.verbose = 0, .terminate_on_nan = true});
  CHECK(std::isfinite(h.last("loss")));
  CHECK(h.last("loss") > 0.0);
}
