#pragma once
// Model<Net, Input, Policy, Backend>: a network bound to its input, precision and backend,
// with Keras's compile / fit / evaluate / predict / summary.
//
// This is where the layers meet: the compile-time spec and plans (above), a backend's
// executor (chosen by tag through executor_for), and the training loop's pieces.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "memopt/backend/cpu/executor.hpp"
#include "memopt/core/backend.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/policy.hpp"
#include "memopt/core/random.hpp"
#include "memopt/data/any_batches.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/model/summary.hpp"
#include "memopt/plan/step_plans.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"
#include "memopt/train/loss_scale.hpp"
#include "memopt/train/losses.hpp"
#include "memopt/train/metrics.hpp"
#include "memopt/train/optimizers.hpp"

namespace memopt {

/// Keras's `fit` arguments.
struct FitOptions {
  int epochs = 1;
  int initial_epoch = 0;
  data::AnyBatches validation_data{};
  std::vector<Callback*> callbacks{};
  /// 0 silent, 1 and 2 one line per epoch.
  int verbose = 1;
};

/// `evaluate`'s result: the mean loss and the accuracy.
struct Evaluation {
  double loss = 0;
  double accuracy = 0;
};

/// A trainable model. The network's shapes, parameters and memory plans are compile-time
/// facts; the backend runs the plan.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
/// auto model = mo::Model<Net, mo::Input<784>, mo::mixed_float16>{/*seed=*/42};
/// model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
/// auto history = model.fit(train | mo::data::batch(32), {.epochs = 5});
/// static_assert(decltype(model)::arena_bytes(32) <= decltype(model)::naive_bytes(32));
/// ```
template <class Net, class In, Policy P = float32, class Backend = cpu>
class Model final : private TrainingContext {
 public:
  using spec = ModelSpec<Net, In, P>;
  using policy = P;
  using backend = Backend;
  using executor_type = typename executor_for<Backend, spec>::type;
  using loss_scale_type = std::conditional_t<P::loss_scaling, DynamicLossScale, NoLossScale>;

  static constexpr std::size_t parameter_count = spec::parameter_count;

  /// Weights drawn as Keras's defaults: Glorot-uniform kernels, zero biases.
  explicit Model(std::uint64_t seed = 0) { set_weights(initial_weights(seed)); }

  // Compile-time facts -------------------------------------------------------------------

  /// Bytes of the training arena for `batch` rows, as planned.
  static constexpr std::size_t arena_bytes(std::size_t batch) {
    return plan::training_plan<spec>(batch).arena_bytes;
  }
  /// Bytes if every buffer of the step had its own allocation.
  static constexpr std::size_t naive_bytes(std::size_t batch) {
    return plan::training_plan<spec>(batch).naive_bytes();
  }
  /// The most bytes alive at once during a step: no arena can be smaller.
  static constexpr std::size_t lower_bound_bytes(std::size_t batch) {
    return plan::training_plan<spec>(batch).lower_bound_bytes();
  }
  static constexpr std::size_t inference_arena_bytes(std::size_t batch) {
    return plan::inference_plan<spec>(batch).arena_bytes;
  }

  // Keras's API ---------------------------------------------------------------------------

  /// Chooses the optimizer, the loss and the metrics. Only Accuracy is a metric for now.
  template <class Opt, class... Metrics>
  void compile(Opt optimizer, SparseCategoricalCrossentropy loss, Metrics...) {
    static_assert(std::same_as<Opt, SGD> || std::same_as<Opt, Adam>,
                  "Model::compile: the optimizer must be mo::SGD or mo::Adam");
    static_assert((std::same_as<Metrics, metrics::Accuracy> && ...),
                  "Model::compile: the only metric is mo::metrics::Accuracy");
    if constexpr (spec::ends_in_softmax) {
      if (loss.options.from_logits)
        throw error(
            "Model::compile: the last layer applies Softmax, so the loss must not use "
            "from_logits=true (found from_logits=true)");
    } else {
      if (!loss.options.from_logits)
        throw error(
            "Model::compile: SparseCategoricalCrossentropy needs probabilities: end the model "
            "with Dense<N, Softmax>, or use a Linear last layer with from_logits=true");
    }
    optimizer_ = optimizer;
    report_accuracy_ = sizeof...(Metrics) > 0;
    state_floats_ = optimizer.slots() * parameter_count;
    executor_.prepare(0, state_floats_);
    iterations_ = 0;
    loss_scale_ = {};
  }

  /// Trains on `batches` (any input range of labelled batches) for `epochs`.
  template <std::ranges::input_range R>
  requires data::LabeledBatch<std::ranges::range_reference_t<R>> History
  fit(R&& batches, const FitOptions& options = {}) {
    require_compiled("fit");
    stop_training = false;
    for (Callback* cb : options.callbacks) cb->set_context(this);
    for (Callback* cb : options.callbacks) cb->on_train_begin({});
    History history;
    for (int epoch = options.initial_epoch; epoch < options.epochs; ++epoch) {
      for (Callback* cb : options.callbacks) cb->on_epoch_begin(epoch, {});
      const auto start = std::chrono::steady_clock::now();
      int batch_index = 0;
      for (const auto& b : batches) {
        const std::size_t rows = check_batch(b, "fit");
        if (rows > executor_.capacity()) executor_.prepare(rows, state_floats_);
        for (Callback* cb : options.callbacks) cb->on_train_batch_begin(batch_index);
        std::visit(
            [&]<class Opt>(const Opt& opt) {
              if constexpr (!std::same_as<Opt, std::monostate>)
                executor_.train_step(std::span<const float>(b.features()).data(),
                                     std::span<const std::int32_t>(b.labels()).data(), rows, opt,
                                     iterations_, loss_scale_);
            },
            optimizer_);
        if (!options.callbacks.empty()) {
          const BatchLogs running{};
          for (Callback* cb : options.callbacks) cb->on_train_batch_end(batch_index, running);
        }
        ++batch_index;
      }
      const StepTotals t = executor_.take_totals();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (t.samples == 0) throw error("fit: the training data produced no batches");
      if (!std::isfinite(t.mean_loss()))
        throw error(
            fmt::format("fit: the loss is {} at epoch {} (expected a finite value); "
                        "lower the learning rate or check the inputs",
                        t.mean_loss(), epoch + 1));
      Logs logs{{"loss", t.mean_loss()}};
      if (report_accuracy_) logs["accuracy"] = t.accuracy();
      if (options.validation_data) {
        const Evaluation v = evaluate_batches(options.validation_data);
        logs["val_loss"] = v.loss;
        if (report_accuracy_) logs["val_accuracy"] = v.accuracy;
      }
      history.append(epoch, logs);
      if (options.verbose > 0) print_epoch(epoch, options.epochs, seconds, batch_index, logs);
      for (Callback* cb : options.callbacks) cb->on_epoch_end(epoch, logs);
      if (stop_training) break;
    }
    for (Callback* cb : options.callbacks) cb->on_train_end({});
    return history;
  }

  /// Mean loss and accuracy over `batches`.
  template <std::ranges::input_range R>
  requires data::LabeledBatch<std::ranges::range_reference_t<R>> Evaluation evaluate(R&& batches) {
    return evaluate_batches(data::AnyBatches(std::views::all(std::forward<R>(batches))));
  }

  /// Outputs (probabilities after a Softmax) for `rows` samples, row after row.
  std::vector<float> predict(std::span<const float> features) {
    if (features.size() % spec::inputs != 0)
      throw error(fmt::format("predict: expected a multiple of {} features, found {}", spec::inputs,
                              features.size()));
    const std::size_t rows = features.size() / spec::inputs;
    std::vector<float> out(rows * spec::outputs);
    if (rows) executor_.predict(features.data(), rows, out.data());
    return out;
  }

  /// Keras's table, plus the fused kernels and the arena at `batch` rows.
  std::string summary_string(std::size_t batch = 32) const {
    return format_summary<spec>(executor_type::backend_name, batch);
  }
  void summary(std::size_t batch = 32, std::FILE* out = stdout) const {
    std::fputs(summary_string(batch).c_str(), out);
  }

  // State ---------------------------------------------------------------------------------

  std::vector<float> get_weights() const override {
    std::vector<float> w(parameter_count);
    executor_.get_parameters(w);
    return w;
  }
  void set_weights(std::span<const float> weights) override {
    if (weights.size() != parameter_count)
      throw error(fmt::format("set_weights: expected {} values, found {}", parameter_count,
                              weights.size()));
    executor_.set_parameters(weights);
  }
  std::vector<float> get_optimizer_state() const {
    std::vector<float> s(executor_.optimizer_state_size());
    executor_.get_optimizer_state(s);
    return s;
  }
  void set_optimizer_state(std::span<const float> state) { executor_.set_optimizer_state(state); }
  /// Updates applied so far (Keras's `optimizer.iterations`).
  std::int64_t iterations() const { return iterations_; }
  void set_iterations(std::int64_t n) { iterations_ = n; }
  const loss_scale_type& loss_scale() const { return loss_scale_; }
  void set_loss_scale(const loss_scale_type& s) { loss_scale_ = s; }

  executor_type& executor() { return executor_; }
  const executor_type& executor() const { return executor_; }

  using TrainingContext::stop_training;

 private:
  static std::vector<float> initial_weights(std::uint64_t seed) {
    std::vector<float> w(parameter_count, 0.0f);
    Rng rng(seed);
    for (std::size_t i = 0; i < spec::depth; ++i) {
      const float limit = std::sqrt(6.0f / static_cast<float>(spec::dims[i] + spec::dims[i + 1]));
      float* k = w.data() + spec::kernel_offset(i);
      for (std::size_t j = 0; j < spec::kernel_size(i); ++j) k[j] = rng.uniform(-limit, limit);
    }
    return w;
  }

  void require_compiled(const char* what) const {
    if (std::holds_alternative<std::monostate>(optimizer_))
      throw error(fmt::format("{}: call compile(optimizer, loss, metrics...) first", what));
  }

  template <class B>
  static std::size_t check_batch(const B& b, const char* what) {
    const std::size_t rows = static_cast<std::size_t>(b.size());
    if (static_cast<std::size_t>(b.width()) != spec::inputs)
      throw error(fmt::format("{}: the model's Input has {} features, the batch has {}", what,
                              spec::inputs, b.width()));
    if (std::span<const float>(b.features()).size() != rows * spec::inputs ||
        std::span<const std::int32_t>(b.labels()).size() != rows)
      throw error(fmt::format("{}: a batch of {} rows must hold {} features and {} labels", what,
                              rows, rows * spec::inputs, rows));
    return rows;
  }

  Evaluation evaluate_batches(const data::AnyBatches& batches) {
    (void)executor_.take_totals();  // start from zero whatever ran before
    batches.for_each([&](const data::BatchRef& b) {
      const std::size_t rows = check_batch(b, "evaluate");
      if (rows) executor_.evaluate_batch(b.features().data(), b.labels().data(), rows);
    });
    const StepTotals t = executor_.take_totals();
    return {t.mean_loss(), t.accuracy()};
  }

  void print_epoch(int epoch, int epochs, double seconds, int steps, const Logs& logs) const {
    std::string line =
        fmt::format("Epoch {}/{} - {} steps - {:.3f}s", epoch + 1, epochs, steps, seconds);
    for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy"})
      if (auto it = logs.find(key); it != logs.end())
        line += fmt::format(" - {}: {:.4f}", key, it->second);
    std::puts(line.c_str());
    std::fflush(stdout);
  }

  executor_type executor_{};
  std::variant<std::monostate, SGD, Adam> optimizer_{};
  loss_scale_type loss_scale_{};
  std::int64_t iterations_ = 0;
  std::size_t state_floats_ = 0;
  bool report_accuracy_ = false;
};

}  // namespace memopt
