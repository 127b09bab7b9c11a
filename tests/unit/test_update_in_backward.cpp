// UpdateInBackward: each layer's parameters are updated as soon as backward has written its
// gradient. The weights and optimizer state after several float32 steps are the same bits as
// the ordinary step's (SGD with momentum, Adam, AdamW, RMSprop, Nadam, Adagrad, clipnorm,
// weight decay, a schedule; an MLP with Recompute, a convnet with BatchNormalization, a
// residual block); the plan holds at most the largest layer's gradients, and the arena
// shrinks; checkpoints resume bit for bit; what needs every gradient at once is refused.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ratio>
#include <string>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/update_in_backward.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/distributed/local_communicator.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/batch_normalization.hpp"
#include "memopt/layers/conv2d.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/layers/dropout.hpp"
#include "memopt/layers/flatten.hpp"
#include "memopt/layers/pooling2d.hpp"
#include "memopt/layers/recompute.hpp"
#include "memopt/layers/rescaling.hpp"
#include "memopt/layers/residual.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/model_plan.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/plan/memory_budget.hpp"
#include "memopt/train/optimizers.hpp"
#include "memopt/train/schedules.hpp"
#include "memopt/train/step.hpp"

#include "blobs.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;

namespace {

using Mlp = mo::Sequential<mo::Dense<16, mo::Recompute<mo::ReLU>>, mo::Dense<12, mo::Tanh>,
                           mo::Dense<4, mo::Softmax>>;
using BnCnn = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::MaxPooling2D<2>, mo::Conv2D<6, 3, mo::ReLU>, mo::Flatten,
                             mo::Dropout<std::ratio<1, 4>>, mo::Dense<4, mo::Softmax>>;
using Res = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Residual<mo::Dense<8, mo::ReLU>>,
                           mo::Residual<mo::Sequential<mo::Dense<6, mo::ReLU>, mo::Dense<8>>>,
                           mo::Dense<4, mo::Softmax>>;

// The plan: the MLP's layers hold 8*16+16 = 144, 16*12+12 = 204 and 12*4+4 = 52 parameters.
using MlpPlan = mo::ModelPlan<Mlp, mo::Input<8>>;
using MlpFused = mo::ModelPlan<Mlp, mo::Input<8>, mo::UpdateInBackward<>>;
static_assert(MlpPlan::gradient_bytes(16) == (144 + 204 + 52) * 4);
static_assert(MlpFused::gradient_bytes(16) == 204 * 4);
static_assert(MlpFused::arena_bytes(16) < MlpPlan::arena_bytes(16));
static_assert(MlpFused::training_plan(16).is_valid());

// The models of examples/01 and examples/02 at batch 32: the gradient memory drops by the
// whole gradient buffer less the largest layer's.
using Example1 = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Example2 =
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<32, 3, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Flatten, mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
// 784*128+128 = 100,480 and 128*10+10 = 1,290 parameters.
static_assert(mo::ModelPlan<Example1, mo::Input<784>>::gradient_bytes(32) == 101'770 * 4);
static_assert(mo::ModelPlan<Example1, mo::Input<784>, mo::UpdateInBackward<>>::gradient_bytes(32) ==
              100'480 * 4);
// 3*3*1*32+32 = 320, 3*3*32*64+64 = 18,496 and 1600*10+10 = 16,010 parameters.
static_assert(mo::ModelPlan<Example2, mo::Input<28, 28, 1>>::gradient_bytes(32) == 34'826 * 4);
static_assert(mo::ModelPlan<Example2, mo::Input<28, 28, 1>, mo::UpdateInBackward<>>::gradient_bytes(
                  32) == 18'496 * 4);

// Under a memory budget, the search plans with the per-layer gradients.
using Budgeted =
    mo::ModelPlan<Mlp, mo::Input<8>,
                  mo::MemoryBudget<MlpFused::arena_bytes(64), 64, mo::UpdateInBackward<>>>;
static_assert(Budgeted::gradient_bytes(64) == 204 * 4);

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// What a run leaves: every weight (moving statistics included), the optimizer state and the
// step count.
struct Trained {
  std::vector<float> weights, state;
  std::int64_t iterations = 0;
};

template <class Net, class In, class P, class Opt>
Trained train(const mo::data::Dataset& data, Opt opt, int epochs = 3) {
  mo::Model<Net, In, P> model{7};
  model.compile(opt, mo::SparseCategoricalCrossentropy{});
  model.fit(data | mo::data::batch(16), {.epochs = epochs, .verbose = 0});
  return {model.get_weights(), model.get_optimizer_state(), model.iterations()};
}

// The two runs are bit-identical, and training moved the weights.
template <class Net, class In, class Opt>
void check_identical(const mo::data::Dataset& data, const Opt& opt) {
  const Trained ordinary = train<Net, In, mo::float32>(data, opt);
  const Trained fused = train<Net, In, mo::UpdateInBackward<>>(data, opt);
  CHECK(same_bits(fused.weights, ordinary.weights));
  CHECK(same_bits(fused.state, ordinary.state));
  CHECK(fused.iterations == ordinary.iterations);
  CHECK(fused.iterations > 0);
  CHECK(ordinary.weights != mo::Model<Net, In>{7}.get_weights());
}

template <class Net, class In>
void check_optimizers(const mo::data::Dataset& data) {
  SUBCASE("SGD with Nesterov momentum") {
    check_identical<Net, In>(data,
                             mo::SGD({.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}));
  }
  SUBCASE("SGD with momentum, clipnorm and an exponential decay") {
    mo::SGD::Options o{.learning_rate =
                           mo::ExponentialDecay{
                               {.initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5}},
                       .momentum = 0.9};
    o.clipnorm = 0.05;
    check_identical<Net, In>(data, mo::SGD(o));
  }
  SUBCASE("Adam") {
    check_identical<Net, In>(data, mo::Adam({.learning_rate = 1e-2}));
  }
  SUBCASE("AdamW, bias excluded from weight decay, clipvalue") {
    mo::AdamW::Options o{};
    o.learning_rate = 1e-2;
    o.weight_decay = 0.1;
    o.clipvalue = 0.01;
    o.exclude_from_weight_decay = {"bias"};
    check_identical<Net, In>(data, mo::AdamW(o));
  }
  SUBCASE("RMSprop, centered with momentum") {
    mo::RMSprop::Options o{};
    o.learning_rate = 1e-2;
    o.momentum = 0.5;
    o.centered = true;
    check_identical<Net, In>(data, mo::RMSprop(o));
  }
  SUBCASE("Nadam") {
    check_identical<Net, In>(data, mo::Nadam({.learning_rate = 1e-2}));
  }
  SUBCASE("Adagrad") {
    check_identical<Net, In>(data, mo::Adagrad({.learning_rate = 0.1}));
  }
}

}  // namespace

TEST_CASE("UpdateInBackward: an MLP with Recompute trains to the ordinary step's bits") {
  check_optimizers<Mlp, mo::Input<8>>(mo::testing::blobs(80, 3));
}

TEST_CASE("UpdateInBackward: a convnet with BatchNormalization and Dropout, the same bits") {
  check_optimizers<BnCnn, mo::Input<8, 8, 1>>(mo::testing::image_blobs(64, 5));
}

TEST_CASE("UpdateInBackward: residual blocks, the same bits") {
  const auto data = mo::testing::blobs(64, 9);
  check_identical<Res, mo::Input<8>>(data, mo::SGD({.learning_rate = 0.05, .momentum = 0.9}));
  check_identical<Res, mo::Input<8>>(data, mo::Adam({.learning_rate = 1e-2}));
}

TEST_CASE("UpdateInBackward under mixed_bfloat16: the same bits as its ordinary step") {
  const auto data = mo::testing::image_blobs(48, 6);
  const mo::Adam adam({.learning_rate = 1e-2});
  const Trained ordinary = train<BnCnn, mo::Input<8, 8, 1>, mo::mixed_bfloat16>(data, adam);
  const Trained fused =
      train<BnCnn, mo::Input<8, 8, 1>, mo::UpdateInBackward<mo::mixed_bfloat16>>(data, adam);
  CHECK(same_bits(fused.weights, ordinary.weights));
  CHECK(same_bits(fused.state, ordinary.state));
}

TEST_CASE("UpdateInBackward: each layer's gradient has a buffer of its own in the plan") {
  constexpr auto plan = MlpFused::training_plan(16);
  constexpr auto ordinary = MlpPlan::training_plan(16);
  using mo::plan::BufferRole;
  CHECK_FALSE(plan.contains(BufferRole::parameter_grads, -1));
  CHECK(ordinary.contains(BufferRole::parameter_grads, -1));
  for (int node = 0; node < 3; ++node) {
    const auto& b = plan.find(BufferRole::parameter_grads, node);
    CHECK(b.bytes ==
          mo::ModelSpec<Mlp, mo::Input<8>, mo::float32>::nodes[std::size_t(node)].parameters *
              sizeof(float));
    CHECK(b.last < plan.steps - 1);  // dies before the step's end
  }
  // Measured on the examples' models (printed for RESULTS.md).
  using E1 = mo::ModelPlan<Example1, mo::Input<784>>;
  using E1Fused = mo::ModelPlan<Example1, mo::Input<784>, mo::UpdateInBackward<>>;
  using E2 = mo::ModelPlan<Example2, mo::Input<28, 28, 1>>;
  using E2Fused = mo::ModelPlan<Example2, mo::Input<28, 28, 1>, mo::UpdateInBackward<>>;
  MESSAGE("examples/01 at batch 32: gradients "
          << E1::gradient_bytes(32) << " -> " << E1Fused::gradient_bytes(32) << " bytes, arena "
          << E1::arena_bytes(32) << " -> " << E1Fused::arena_bytes(32));
  MESSAGE("examples/02 at batch 32: gradients "
          << E2::gradient_bytes(32) << " -> " << E2Fused::gradient_bytes(32) << " bytes, arena "
          << E2::arena_bytes(32) << " -> " << E2Fused::arena_bytes(32));
  CHECK(E1Fused::arena_bytes(32) < E1::arena_bytes(32));
  CHECK(E2Fused::arena_bytes(32) < E2::arena_bytes(32));
  CHECK(E2::arena_bytes(32) - E2Fused::arena_bytes(32) >= (34'826 - 18'496) * 4);
}

TEST_CASE("UpdateInBackward: a checkpoint resumes bit for bit, and loads across the modes") {
  const auto data = mo::testing::image_blobs(48, 8);
  const mo::Adam adam({.learning_rate = 1e-2});
  const Trained straight = train<BnCnn, mo::Input<8, 8, 1>, mo::UpdateInBackward<>>(data, adam, 2);
  mo::testing::TempDir dir;
  const auto path = dir / "run.safetensors";
  {
    mo::Model<BnCnn, mo::Input<8, 8, 1>, mo::UpdateInBackward<>> first{7};
    first.compile(adam, mo::SparseCategoricalCrossentropy{});
    first.fit(data | mo::data::batch(16), {.epochs = 1, .verbose = 0});
    first.save(path);
  }
  mo::Model<BnCnn, mo::Input<8, 8, 1>, mo::UpdateInBackward<>> resumed{
      7};  // the seed of Dropout's masks
  resumed.compile(adam, mo::SparseCategoricalCrossentropy{});
  resumed.load(path);
  resumed.fit(data | mo::data::batch(16), {.epochs = 2, .initial_epoch = 1, .verbose = 0});
  CHECK(same_bits(resumed.get_weights(), straight.weights));
  CHECK(same_bits(resumed.get_optimizer_state(), straight.state));
  // The ordinary step continues the same run to the same bits.
  mo::Model<BnCnn, mo::Input<8, 8, 1>> ordinary{7};
  ordinary.compile(adam, mo::SparseCategoricalCrossentropy{});
  ordinary.load(path);
  ordinary.fit(data | mo::data::batch(16), {.epochs = 2, .initial_epoch = 1, .verbose = 0});
  CHECK(same_bits(ordinary.get_weights(), straight.weights));
}

TEST_CASE("UpdateInBackward refuses what needs every gradient at once") {
  mo::Model<Mlp, mo::Input<8>, mo::UpdateInBackward<>> model{1};
  mo::Adam::Options clipped{};
  clipped.global_clipnorm = 1.0;
  CHECK_THROWS_WITH_AS(model.compile(mo::Adam(clipped), mo::SparseCategoricalCrossentropy{}),
                       doctest::Contains("global_clipnorm = 1.000000 scales every gradient"),
                       mo::error);
  mo::SGD::Options accumulated{};
  accumulated.gradient_accumulation_steps = 4;
  CHECK_THROWS_WITH_AS(model.compile(mo::SGD(accumulated), mo::SparseCategoricalCrossentropy{}),
                       doctest::Contains("gradient_accumulation_steps = 4 applies the mean"),
                       mo::error);
  model.compile(mo::SGD({.momentum = 0.9}), mo::SparseCategoricalCrossentropy{});
  mo::distributed::LocalCommunicator comm;
  CHECK_THROWS_WITH_AS(model.fit(mo::testing::blobs(32, 1) | mo::data::batch(8),
                                 {.verbose = 0, .communicator = &comm}),
                       doctest::Contains("UpdateInBackward cannot train data-parallel"), mo::error);
  // The gradients are never all kept.
  model.fit(mo::testing::blobs(32, 1) | mo::data::batch(8), {.verbose = 0});
  std::vector<float> g(decltype(model)::parameter_count);
  CHECK_THROWS_AS(model.executor().get_gradients(g), mo::error);
}

TEST_CASE("UpdateInBackward: a layer whose gradients are not finite is left as it is") {
  mo::Model<Mlp, mo::Input<8>, mo::UpdateInBackward<>> model{1};
  const mo::SGD sgd({.learning_rate = 0.1});
  model.compile(sgd, mo::SparseCategoricalCrossentropy{});
  const std::vector<float> before = model.get_parameters();
  std::vector<float> x(8 * 8, 0.25f);
  x[3] = std::numeric_limits<float>::infinity();
  const std::vector<std::int32_t> y{0, 1, 2, 3, 0, 1, 2, 3};
  auto& e = model.executor();
  e.prepare(8, 0);  // SGD without momentum keeps no state
  std::int64_t iterations = 0;
  mo::NoLossScale scale;
  mo::train::training_step(e, x.data(), y.data(), 8, sgd, iterations, scale);
  CHECK(iterations == 0);  // the step counts as skipped
  CHECK(e.take_totals().skipped_steps == 1);
  // The first layer's kernel reads the infinite input: its gradient is not finite, and it
  // keeps its weights.
  const std::vector<float> after = model.get_parameters();
  CHECK(std::equal(after.begin(), after.begin() + 144, before.begin()));
}

TEST_CASE("UpdateInBackward: summary shows the mode and the gradient memory saved") {
  mo::Model<Mlp, mo::Input<8>, mo::UpdateInBackward<>> model{1};
  const std::string s = model.summary_string(16);
  CHECK(s.find("Updates in backward: each layer's parameters as soon as its gradient is "
               "written; gradients 816 bytes at most at once (the largest layer's), 1600 without "
               "(784 saved)") != std::string::npos);
  CHECK(mo::Model<Mlp, mo::Input<8>>{1}.summary_string(16).find("Updates in backward") ==
        std::string::npos);
}
