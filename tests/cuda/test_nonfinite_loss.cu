// A NaN or inf loss on the GPU (issue 13, item 4): with `.terminate_on_nan`, fit stops and
// names the step where the loss first stopped being finite, found from the running loss sums
// each step copies to pinned memory, so the host never waits for a step to learn it.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

// As tests/unit/test_nonfinite_loss.cpp: logits (x0, -x0, 0, 0); a row (3e38, 0) labelled 1
// costs 2 x0, inf in float.
using Logits = mo::Sequential<mo::Dense<4>>;
using GpuModel = mo::Model<Logits, mo::Input<2>, mo::float32, mo::cuda>;

struct CountBatches : mo::Callback {
  int ended = 0;
  void on_train_batch_end(int, const mo::BatchLogs&) override { ++ended; }
};

}  // namespace

TEST_CASE("terminate_on_nan on the GPU names the step whose loss is first not finite") {
  GpuModel model{1};
  model.compile(mo::SGD{{.learning_rate = 1e-3}},
                mo::SparseCategoricalCrossentropy{{.from_logits = true}});
  std::vector<float> w(GpuModel::parameter_count, 0.0f);
  w[0] = 1.0f;
  w[1] = -1.0f;
  model.set_weights(w);

  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (int r = 0; r < 8; ++r) {
    x.push_back(r == 2 ? 3e38f : 1.0f);
    x.push_back(0.0f);
    y.push_back(r == 2 ? 1 : 0);
  }
  const auto data = mo::data::from(std::move(x), std::move(y), 2);
  CountBatches count;
  std::string what = "no error";
  try {
    model.fit(data | mo::data::batch(1),
              {.epochs = 2, .callbacks = {&count}, .verbose = 0, .terminate_on_nan = true});
  } catch (const mo::error& e) {
    what = e.what();
  }
  MESSAGE(what);
  CHECK(what.find("the loss is inf at epoch 1, step 3") != std::string::npos);
  CHECK(what.find("terminate_on_nan") != std::string::npos);
  CHECK(count.ended >= 2);  // found once the device finished step 3: a step or two later
  CHECK(count.ended < 8);   // but within the epoch, not at its end
}
