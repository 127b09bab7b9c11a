#pragma once
// Model<Net, Input, Policy, Backend, BucketCaps>: a network bound to its input, precision and
// backend, with Keras's compile / fit / evaluate / predict / summary.
//
// This is where the layers meet: the compile-time spec and plans (above), a backend's
// executor (chosen by tag through executor_for; the backend's header defines it), and the
// training loop (train/: fit_loop runs the epochs through train::Trainee, which Model
// implements; one step walks the plan's schedule).

#include <algorithm>
#include <any>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/backend.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/policy.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/core/update_in_backward.hpp"
#include "memopt/data/any_batches.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/distributed/bucket_reducer.hpp"
#include "memopt/distributed/communicator_ref.hpp"
#include "memopt/distributed/fit_sync.hpp"
#include "memopt/model/initial_weights.hpp"
#include "memopt/model/model_plan.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/model/summary.hpp"
#include "memopt/plan/gradient_buckets.hpp"
#include "memopt/plan/report.hpp"
#include "memopt/plan/step_plans.hpp"
#include "memopt/plan/timeline_svg.hpp"
#include "memopt/train/any_metric.hpp"
#include "memopt/train/any_optimizer.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/checkpoint.hpp"
#include "memopt/train/executor.hpp"
#include "memopt/train/fit_loop.hpp"
#include "memopt/train/fit_options.hpp"
#include "memopt/train/gradient_accumulation.hpp"
#include "memopt/train/history.hpp"
#include "memopt/train/loss_scale.hpp"
#include "memopt/train/losses.hpp"
#include "memopt/train/metrics.hpp"
#include "memopt/train/nonfinite_loss.hpp"
#include "memopt/train/optimizer.hpp"
#include "memopt/train/optimizers.hpp"
#include "memopt/train/step.hpp"

namespace memopt {

namespace data {
// Defined in data/image_directory.hpp (which needs memopt::images); predict(file) names it
// only as its options' default type, so this header needs no image library.
struct ImageDirectoryOptions;
}  // namespace data

namespace detail {

/// One decoded 8-bit image, `height x width x channels` values in `pixels`: io::image::Image,
/// data::LabeledImage or data::ImageView (named by their members, so that this header needs
/// none of io/image's headers).
template <class T>
concept DecodedImage = requires(const T& t) {
  std::span<const std::uint8_t>(t.pixels);
  static_cast<std::size_t>(t.height) * static_cast<std::size_t>(t.width) *
      static_cast<std::size_t>(t.channels);
};

// Keras's optimizer.build(var_list): the trainable tensors by name and place.
inline std::vector<ParameterRange> parameter_ranges(const SpecTables& model) {
  std::vector<ParameterRange> ranges;
  for (const WeightEntry& e : model.weights)
    if (e.decl.trainable)
      ranges.push_back({model.layer_name(e.layer) + "/" + std::string(e.decl.name),
                        std::string(e.decl.name), e.offset, e.decl.size()});
  return ranges;
}

// What data-parallel ranks compare before training together: the model, policy, optimizer,
// gradient buckets and metrics.
inline std::string fit_description(const SpecTables& model, std::string_view policy,
                                   std::string_view optimizer, std::size_t first_bucket_bytes,
                                   std::size_t rest_bucket_bytes,
                                   std::span<const AnyMetric> metrics) {
  std::string description =
      checkpoint::model_description(model) + " " + std::string(policy) + " " +
      std::string(optimizer) +
      fmt::format(" buckets {}/{} metrics", first_bucket_bytes, rest_bucket_bytes);
  for (const AnyMetric& m : metrics) description += " " + std::string(m.name());
  return description;
}

}  // namespace detail

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
///
/// `Caps` (a BucketCaps) sizes the gradient buckets that a data-parallel fit all-reduces
/// while backward runs (plan/gradient_buckets.hpp); PyTorch DDP's 1 MiB, then 25 MiB, unless
/// given.
template <class Net, class In, Policy P = float32, class Backend = cpu, class Caps = BucketCaps<>>
class Model final : public ModelPlan<Net, In, P>, private train::Trainee {
 public:
  using spec = ModelSpec<Net, In, P>;
  using policy = P;
  using backend = Backend;
  using executor_type = typename executor_for<Backend, spec>::type;
  // (void: the backend's header is missing, which executor_for has already said.)
  static_assert(std::is_void_v<executor_type> || train::Executor<executor_type>,
                "Model: the backend's executor must satisfy memopt::train::Executor (see "
                "memopt/train/executor.hpp)");
  using loss_scale_type = std::conditional_t<P::loss_scaling, DynamicLossScale, NoLossScale>;

  static constexpr std::size_t parameter_count = spec::parameter_count;
  /// Every weight's values, the non-trainable ones included: what get_weights holds.
  static constexpr std::size_t weight_count = spec::weight_count;
  /// The gradient buckets of a data-parallel fit, in the order their all-reduces start.
  static constexpr auto gradient_buckets = plan::gradient_buckets<spec, Caps>();

  /// Weights drawn as Keras's defaults: Glorot-uniform kernels, zero biases, BatchNormalization's
  /// gamma and moving variance ones.
  explicit Model(std::uint64_t seed = 0) {
    std::vector<float> trainable(parameter_count), state(spec::state_count);
    initial_weights(spec::weights, seed, trainable, state);
    set_parameters(trainable);
    if constexpr (spec::state_count > 0) executor_.set_state_weights(state);
    executor_.set_seed(seed);
  }

  // Compile-time facts: arena_bytes, naive_bytes, lower_bound_bytes, training_plan, ... are
  // ModelPlan's (model/model_plan.hpp).

  // Keras's API ---------------------------------------------------------------------------

  /// Chooses the optimizer (any mo::Optimizer: SGD, Adam, AdamW, RMSprop, Adagrad, Nadam or
  /// a type of your own), the loss (any mo::Loss: the crossentropies, MeanSquaredError,
  /// MeanAbsoluteError, Huber or a type of your own) and the metrics.
  template <class Opt, class L, class... Metrics>
  void compile(Opt optimizer, L loss, Metrics... metrics) {
    static_assert(Optimizer<Opt>,
                  "Model::compile: the optimizer must satisfy mo::Optimizer: a static `name`, "
                  "slots(), slot_names(), learning_rate(iteration) and update(w, g, state, "
                  "iteration); see memopt/train/optimizer.hpp");
    static_assert(Loss<L>,
                  "Model::compile: the loss must satisfy mo::Loss: a static `name`, a "
                  "`target_type` (std::int32_t or float), an `accuracy` and value_and_grad(row) "
                  "or logits_value_and_grad(row); see memopt/train/loss.hpp");
    // A backend that runs only some optimizers says so (at compile time where it can).
    executor_type::check_optimizer(optimizer);
    static_assert(
        train::SteppedExecutor<executor_type> || std::same_as<L, SparseCategoricalCrossentropy>,
        "Model::compile: the CUDA backend trains with SparseCategoricalCrossentropy "
        "only for now: use mo::cpu for other losses");
    static_assert(((std::same_as<Metrics, metrics::Accuracy> || Metric<Metrics>)&&...),
                  "Model::compile: a metric must be mo::metrics::Accuracy or satisfy mo::Metric: "
                  "a static `name`, reset_state(), update_state(MetricBatch) and result(); see "
                  "memopt/train/metric.hpp");
    static_assert(
        !(std::same_as<Metrics, metrics::Accuracy> || ...) || L::accuracy != AccuracyKind::none,
        "Model::compile: accuracy means nothing for a regression loss; measure it "
        "with mo::metrics::MeanAbsoluteError or MeanSquaredError");
    static_assert((reads_targets_of<Metrics, typename L::target_type> && ...),
                  "Model::compile: a metric does not read the loss's targets (class indices for "
                  "SparseCategoricalCrossentropy, float vectors for the others): e.g. "
                  "SparseTopKCategoricalAccuracy with class indices, TopKCategoricalAccuracy "
                  "with one-hot rows");
    static_assert(
        train::SteppedExecutor<executor_type> || (std::same_as<Metrics, metrics::Accuracy> && ...),
        "Model::compile: the CUDA backend counts mo::metrics::Accuracy only for now: "
        "use mo::cpu for other metrics");
    check_loss(loss);
    set_optimizer(std::move(optimizer));
    loss_name_ = L::name;
    loss_reads_floats_ = std::same_as<typename L::target_type, float>;
    loss_ = loss;
    float_step_ = &Model::step_with<Opt, L, float>;
    float_evaluate_ = &Model::evaluate_with<L, float>;
    if constexpr (reads_pixels) {
      pixel_step_ = &Model::step_with<Opt, L, std::uint8_t>;
      pixel_evaluate_ = &Model::evaluate_with<L, std::uint8_t>;
    }
    report_accuracy_ = (std::same_as<Metrics, metrics::Accuracy> || ...);
    metrics_.clear();
    (add_metric(metrics), ...);
    iterations_ = 0;
    loss_scale_ = {};
    completed_epochs_ = 0;
    epoch_batches_ = 0;
  }

  /// Trains on `batches` (any input range of labelled batches: float rows, or 8-bit images
  /// that the model sees as 0..255, so put `Rescaling<std::ratio<1, 255>>` first) for `epochs`.
  template <std::ranges::input_range R>
  requires data::TrainingBatch<std::ranges::range_reference_t<R>> History
  fit(R&& batches, const FitOptions& options = {}) {
    static_assert_reads<std::ranges::range_reference_t<R>>();
    require_compiled("fit");
    distributed::FitSync sync(options.communicator);  // does nothing without a communicator
    std::size_t steps = 0;  // per epoch, when known before the first epoch ends
    if constexpr (std::ranges::sized_range<R>) steps = std::ranges::size(batches);
    // An error on this rank alone would leave the others waiting for it: tell them first
    // (notify_failure does not when every rank raised it together).
    try {
      const DistributedScope distributed_scope(*this, sync);
      // By reference: `batches` outlives the loop, and its own state (a shuffle's epoch)
      // carries over to the next fit.
      return train::fit_loop(*this, data::AnyBatches(std::ranges::ref_view(batches)), steps,
                             options, sync);
    } catch (const std::exception& e) {
      sync.notify_failure(e.what());
      throw;
    } catch (...) {
      sync.notify_failure("an exception not derived from std::exception");
      throw;
    }
  }

  /// Unbatched training data (a data::Dataset, a range of data::Sample): a compile-time
  /// error that says what to add, rather than an unsatisfied `b.features()`.
  template <std::ranges::input_range R>
  requires(!data::TrainingBatch<std::ranges::range_reference_t<R>>) History
      fit(R&&, const FitOptions& = {}) {
    static_assert(detail::dependent_false<R>,
                  "Model::fit: the training data must be batched: add `| mo::data::batch(N)` "
                  "(fit reads a range of data::LabeledBatch; this range yields single samples "
                  "or something else)");
    return {};
  }

  /// Mean loss and accuracy over `batches` (float rows or 8-bit images, as `fit`).
  template <std::ranges::input_range R>
  requires data::TrainingBatch<std::ranges::range_reference_t<R>> Evaluation evaluate(R&& batches) {
    static_assert_reads<std::ranges::range_reference_t<R>>();
    return evaluate_batches(data::AnyBatches(std::views::all(std::forward<R>(batches))));
  }
  /// Unbatched data: a compile-time error that says what to add.
  template <std::ranges::input_range R>
  requires(!data::TrainingBatch<std::ranges::range_reference_t<R>>) Evaluation evaluate(R&&) {
    static_assert(detail::dependent_false<R>,
                  "Model::evaluate: the data must be batched: add `| mo::data::batch(N)` "
                  "(evaluate reads a range of data::LabeledBatch)");
    return {};
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
  /// Outputs for one sample (`dataset[i]`): `outputs` values.
  ///
  /// ```cpp
  /// std::vector<float> p = model.predict(test[0]);  // p[k]: probability of class k
  /// ```
  std::vector<float> predict(const data::Sample& sample) {
    if (sample.features.size() != spec::inputs)
      throw error(fmt::format("predict: the model's Input has {} features, the sample has {}",
                              spec::inputs, sample.features.size()));
    return predict(sample.features);
  }
  /// Keras's `predict(dataset)`: the outputs of every row of a range of batches (float rows
  /// or 8-bit images), row after row (`rows x outputs`); labels, when the batches have them,
  /// are ignored.
  ///
  /// ```cpp
  /// std::vector<float> p = model.predict(test | mo::data::batch(256));
  /// ```
  template <std::ranges::input_range R>
  requires data::InputBatch<std::ranges::range_reference_t<R>> std::vector<float> predict(
      R&& batches) {
    static_assert_reads<std::ranges::range_reference_t<R>>();
    std::vector<float> out;
    for (const auto& b : batches) {
      const auto features = data::input_values(b);
      const std::size_t rows = static_cast<std::size_t>(b.size());
      check_input(b, "predict");
      if (features.size() != rows * spec::inputs)
        throw error(fmt::format("predict: a batch of {} rows must hold {} features, found {}", rows,
                                rows * spec::inputs, features.size()));
      const std::size_t at = out.size();
      out.resize(at + rows * spec::outputs);
      if (rows) executor_.predict(features.data(), rows, out.data() + at);
    }
    return out;
  }
  /// Keras's `predict` on an array of images: the outputs of every image of `images`, row
  /// after row (`images.size() x outputs`); labels are ignored.
  ///
  /// ```cpp
  /// using Net = mo::Sequential<mo::Flatten, mo::Dense<10, mo::Softmax>>;
  /// mo::Model<Net, mo::Input<28, 28, 1>> model{/*seed=*/1};
  /// mo::data::ImageBatch batch;  // as `dir | dir.decode() | mo::data::batch(32)` gives them
  /// std::vector<float> p = model.predict(batch);  // p[i * outputs + k]: image i, class k
  /// ```
  std::vector<float> predict(const data::ImageBatch& images) {
    static_assert_reads<data::ImageBatch>();
    check_input(images, "predict");
    std::vector<float> out(images.size() * spec::outputs);
    if (!images.empty()) executor_.predict(images.pixels().data(), images.size(), out.data());
    return out;
  }
  /// Outputs for one decoded image (`io::image::decode`'s `Image`, or a `data::LabeledImage`
  /// or `data::ImageView` from a pipeline): `outputs` values, the same as its row of a batch.
  /// An image of another shape than the model's Input raises `memopt::error` naming both.
  ///
  /// ```cpp
  /// #include <memopt/io/image/decode.hpp>
  /// using Net = mo::Sequential<mo::Flatten, mo::Dense<10, mo::Softmax>>;
  /// mo::Model<Net, mo::Input<128, 128, 3>> model{/*seed=*/1};
  /// auto img = mo::io::image::decode(bytes, mo::io::image::ColorMode::rgb);  // 128 x 128
  /// std::vector<float> p = model.predict(img);  // p[k]: probability of class k
  /// ```
  template <detail::DecodedImage Image>
  std::vector<float> predict(const Image& image) {
    return predict_image(
        std::span<const std::uint8_t>(image.pixels), static_cast<std::size_t>(image.height),
        static_cast<std::size_t>(image.width), static_cast<std::size_t>(image.channels));
  }
  /// Outputs for the image file at `file` (JPEG, PNG or BMP), decoded as `options` say: pass
  /// the training directory's `options()` to decode it exactly as training did (size, colour
  /// mode, interpolation, crop). Without options, the file is resized (bilinear) to the
  /// model's Input<H, W, C>, as grayscale for C = 1 and RGB for C = 3. Options whose
  /// `image_size` and `color_mode` do not give the Input's shape raise `memopt::error` naming
  /// both shapes; the file is never resized behind them. Needs
  /// `<memopt/data/image_directory.hpp>` (and `memopt::images`).
  ///
  /// ```cpp
  /// #include <memopt/data/image_directory.hpp>
  /// using Net = mo::Sequential<mo::Flatten, mo::Dense<10, mo::Softmax>>;
  /// using Model = mo::Model<Net, mo::Input<128, 128, 3>>;
  /// Model model{/*seed=*/1};
  /// auto train = mo::data::image_directory<Model>("photos");  // 128 x 128, RGB
  /// std::vector<float> p = model.predict("cat.jpg", train.options());
  /// ```
  template <class Options>
  std::vector<float> predict(const std::filesystem::path& file, const Options& options) {
    // Found by argument-dependent lookup, in image_directory.hpp beside the options.
    const auto image = load_image(file, options);
    return predict_image(image.pixels, static_cast<std::size_t>(image.height),
                         static_cast<std::size_t>(image.width),
                         static_cast<std::size_t>(image.channels), "predict(" + file.string() + ")",
                         "the file decodes to");
  }
  template <class Options = data::ImageDirectoryOptions>
  std::vector<float> predict(const std::filesystem::path& file) {
    // The options' type is complete only where image_directory.hpp is included.
    static_assert(
        requires { sizeof(Options); },
        "Model::predict(file): include <memopt/data/image_directory.hpp> (and link "
        "memopt::images) to predict from an image file");
    if constexpr (requires { sizeof(Options); }) {
      return predict(file, model_image_options<Options>());
    } else {
      return {};
    }
  }
  /// Unbatched data: a compile-time error that says what to add.
  template <std::ranges::input_range R>
  requires(!data::InputBatch<std::ranges::range_reference_t<R>> &&
           !std::convertible_to<R, std::span<const float>> &&
           !std::convertible_to<R, std::filesystem::path>) std::vector<float> predict(R&&) {
    static_assert(detail::dependent_false<R>,
                  "Model::predict: expected rows of floats (a span), one data::Sample, one image "
                  "(a decoded io::image::Image, data::LabeledImage or ImageView, or a file "
                  "path), a data::ImageBatch, or a range of batches: for a dataset add "
                  "`| mo::data::batch(N)`");
    return {};
  }

  /// Keras's table, plus the fused kernels and the arena at `batch` rows; without `batch`,
  /// at the batch fit prepared the arena for (32 before any fit). The arena fit prepared is
  /// shown too when it is for another batch.
  std::string summary_string(std::optional<std::size_t> batch = std::nullopt) const {
    SummaryCompiled compiled{};
    if (optimizer_)
      compiled = {loss_name_, optimizer_.name(), optimizer_.slots(),
                  static_cast<std::size_t>(accumulation_steps_)};
    std::string threads;
    if constexpr (requires { executor_type::threads_summary(); })
      threads = executor_type::threads_summary();
    return format_summary<spec, Caps>(executor_type::backend_name, {batch, executor_.capacity()},
                                      compiled, threads);
  }
  void summary(std::optional<std::size_t> batch = std::nullopt, std::FILE* out = stdout) const {
    std::fputs(summary_string(batch).c_str(), out);
  }

  /// Every buffer of a training step at `batch` rows (`inference_memory_report` for
  /// predict): name, bytes, offset and lifetime. Print it with fmt, or write it as JSON.
  ///
  /// ```cpp
  /// fmt::print("{}", model.memory_report(32));
  /// std::string json = mo::plan::to_json(model.memory_report(32));
  /// ```
  static plan::MemoryReport memory_report(std::size_t batch) {
    return plan::training_memory_report<spec>(batch);
  }
  static plan::MemoryReport inference_memory_report(std::size_t batch) {
    return plan::inference_memory_report<spec>(batch);
  }
  /// Draws the training arena at `batch` rows as an SVG: step on x, byte offset on y, one
  /// labelled rectangle per buffer. Written atomically; raises memopt::error on failure.
  static void write_memory_timeline_svg(const std::filesystem::path& path, std::size_t batch) {
    plan::write_memory_timeline_svg(path, memory_report(batch));
  }

  // State ---------------------------------------------------------------------------------

  /// Keras's `get_weights()`: every weight, trainable or not, in Keras's order (layer by
  /// layer, a layer's trainable weights then its non-trainable ones: BatchNormalization's
  /// gamma, beta, moving_mean, moving_variance), `weight_count` values. This is the model's
  /// whole state apart from the optimizer's: what EarlyStopping keeps, checkpoints write and
  /// a data-parallel fit broadcasts. For a model without non-trainable weights it is
  /// get_parameters().
  ///
  /// ```cpp
  /// std::vector<float> best = model.get_weights();
  /// model.fit(batches, {.epochs = 1});
  /// model.set_weights(best);  // moving statistics too
  /// ```
  std::vector<float> get_weights() const override {
    if constexpr (spec::state_count == 0) {
      return get_parameters();
    } else {
      std::vector<float> all(weight_count);
      join_weights(spec::tables(), get_parameters(), get_state_weights(), all);
      return all;
    }
  }
  /// Keras's `set_weights(weights)`: every weight, as get_weights gives them; raises
  /// memopt::error, changing nothing, unless there are exactly `weight_count` values.
  void set_weights(std::span<const float> weights) override {
    if (weights.size() != weight_count)
      throw error(
          fmt::format("set_weights: expected {} values ({} trainable and {} non-trainable, in "
                      "get_weights' order), found {}{}",
                      weight_count, parameter_count, spec::state_count, weights.size(),
                      weights.size() == parameter_count && spec::state_count > 0
                          ? " (the trainable ones alone: use set_parameters, or give the moving "
                            "statistics too)"
                          : ""));
    if constexpr (spec::state_count == 0) {
      executor_.set_parameters(weights);
    } else {
      std::vector<float> parameters(parameter_count), state(spec::state_count);
      split_weights(spec::tables(), weights, parameters, state);
      executor_.set_parameters(parameters);
      executor_.set_state_weights(state);
    }
  }
  /// The trainable weights alone, as the optimizer updates them (`parameter_count` values,
  /// laid out as `checkpoint::parameter_slices<spec>()` says; the optimizer's state is laid
  /// out alike).
  std::vector<float> get_parameters() const {
    std::vector<float> w(parameter_count);
    executor_.get_parameters(w);
    return w;
  }
  void set_parameters(std::span<const float> parameters) {
    if (parameters.size() != parameter_count)
      throw error(fmt::format("set_parameters: expected {} values, found {}", parameter_count,
                              parameters.size()));
    executor_.set_parameters(parameters);
  }
  /// The non-trainable weights alone (BatchNormalization's moving statistics), laid out as
  /// `checkpoint::parameter_slices<spec>(false)` says; empty for models without.
  std::vector<float> get_state_weights() const {
    std::vector<float> s(spec::state_count);
    if constexpr (spec::state_count > 0) executor_.get_state_weights(s);
    return s;
  }
  void set_state_weights(std::span<const float> state) {
    if (state.size() != spec::state_count)
      throw error(fmt::format("set_state_weights: expected {} values, found {}", spec::state_count,
                              state.size()));
    if constexpr (spec::state_count > 0) executor_.set_state_weights(state);
  }
  std::vector<float> get_optimizer_state() const {
    std::vector<float> s(executor_.optimizer_state_size());
    executor_.get_optimizer_state(s);
    return s;
  }
  void set_optimizer_state(std::span<const float> state) { executor_.set_optimizer_state(state); }
  /// Keras's `model.optimizer.learning_rate`: the learning rate of the next update (a
  /// schedule's value at the current iteration).
  double learning_rate() const override {
    require_compiled("learning_rate");
    return optimizer_.learning_rate(iterations_);
  }
  /// Keras's `model.optimizer.learning_rate = value`; raises when it is a schedule.
  void set_learning_rate(double value) override {
    require_compiled("set_learning_rate");
    optimizer_.set_learning_rate(value);
  }
  /// Updates applied so far (Keras's `optimizer.iterations`).
  std::int64_t iterations() const { return iterations_; }
  void set_iterations(std::int64_t n) { iterations_ = n; }
  const loss_scale_type& loss_scale() const { return loss_scale_; }
  void set_loss_scale(const loss_scale_type& s) { loss_scale_ = s; }
  /// Epochs completed by fit (during fit: the epoch being trained), or restored by load():
  /// resume with `.initial_epoch = this`.
  int completed_epochs() const override { return completed_epochs_; }
  int epoch_batches() const override { return epoch_batches_; }

  // Checkpoints (safetensors, written atomically; see train/checkpoint.hpp) -------------

  /// Keras's `save_weights`: every weight of get_weights under its Keras name,
  /// `dense/kernel` [inputs, units], `dense/bias` [units], ...,
  /// `batch_normalization/moving_mean` [channels], ...
  ///
  /// ```cpp
  /// model.save_weights("model.safetensors");
  /// Model other{7};
  /// other.load_weights("model.safetensors");
  /// ```
  void save_weights(const std::filesystem::path& path) const override {
    checkpoint::save_weights<spec>(path, get_weights());
  }
  /// Reads weights saved by save_weights or save (F32, F16 or BF16), strictly: every tensor
  /// present with its exact shape, nothing extra. Keras 3's variable paths load too (a
  /// safetensors file of `{v.path: v.numpy() for v in model.weights}`:
  /// `sequential/dense/kernel`); Keras's `.h5` files load with mo::load_keras_weights
  /// (`<memopt/io/keras_h5.hpp>`).
  void load_weights(const std::filesystem::path& path) {
    set_weights(checkpoint::load_weights<spec>(path));
  }
  /// Keras's `save`: the weights, the optimizer state (`optimizer/...`) and, in the metadata,
  /// the epochs completed, the step, the loss scale, the policy and the model type's hash.
  ///
  /// ```cpp
  /// model.save("run.safetensors");
  /// // later, in a fresh process:
  /// model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  /// model.load("run.safetensors");
  /// model.fit(batches, {.epochs = 10, .initial_epoch = model.completed_epochs()});
  /// ```
  void save(const std::filesystem::path& path) const override {
    require_compiled("save");
    if (fit_sync_ && accumulated_batches() != 0)
      throw error(fmt::format(
          "save: {} batch(es) are summed toward the next update (gradient_accumulation_steps = "
          "{}), and under data parallelism each rank holds only its own part of those sums; "
          "save between updates (give each epoch a multiple of {} batches)",
          accumulated_batches(), accumulation_steps_, accumulation_steps_));
    checkpoint::TrainingState s;
    s.weights = get_weights();
    s.optimizer_state = get_optimizer_state();
    s.optimizer = optimizer_name();
    s.slot_names = state_slot_names();
    if constexpr (train::SteppedExecutor<executor_type>) {
      s.accumulated_batches = executor_.gradient_accumulation().batches();
      s.accumulated_rows = executor_.gradient_accumulation().rows();
    }
    if (learning_rate_settable_) s.learning_rate = optimizer_.learning_rate(iterations_);
    s.iterations = iterations_;
    s.epoch = completed_epochs_;
    s.epoch_batches = epoch_batches_;
    checkpoint::store_loss_scale(s, loss_scale_);
    checkpoint::save<spec>(path, s);
  }
  /// Restores everything save() wrote, for a model compiled with the same optimizer; training
  /// then continues exactly as if it had never stopped.
  void load(const std::filesystem::path& path) override {
    require_compiled("load");
    const checkpoint::TrainingState s =
        checkpoint::load<spec>(path, optimizer_name(), state_slot_names());
    if constexpr (train::SteppedExecutor<executor_type>) {
      GradientAccumulation restored(accumulation_steps_);
      restored.restore(s.accumulated_batches, s.accumulated_rows);  // checked before any change
      executor_.gradient_accumulation() = restored;
    }
    set_weights(s.weights);
    set_optimizer_state(s.optimizer_state);
    if (s.learning_rate && learning_rate_settable_) optimizer_.set_learning_rate(*s.learning_rate);
    iterations_ = s.iterations;
    completed_epochs_ = s.epoch;
    epoch_batches_ = s.epoch_batches;
    checkpoint::restore_loss_scale(s, loss_scale_);
  }

  executor_type& executor() { return executor_; }
  const executor_type& executor() const { return executor_; }

  using TrainingContext::stop_training;
  /// During a data-parallel fit, this process's rank; else 0.
  int rank() const override { return fit_sync_ ? fit_sync_->rank() : 0; }

  // What logging callbacks read (callbacks::TensorBoard) --------------------------------

  std::string summary_text() const override { return summary_string(); }
  /// The trainable tensors, then the non-trainable ones (BatchNormalization's moving
  /// statistics), as Keras's `layer.weights` lists them.
  std::vector<NamedWeights> named_weights() const override {
    std::vector<NamedWeights> out;
    const auto take = [&out](const auto& slices, const std::vector<float>& all) {
      for (const auto& s : slices)
        out.push_back({s.name, std::vector<float>(
                                   all.begin() + static_cast<std::ptrdiff_t>(s.offset),
                                   all.begin() + static_cast<std::ptrdiff_t>(s.offset + s.size))});
    };
    take(checkpoint::parameter_slices<spec>(), get_parameters());
    take(checkpoint::state_slices<spec>(), get_state_weights());
    return out;
  }
  MemoryFigures memory_figures() const override {
    MemoryFigures m;
    if constexpr (requires { executor_.arena_bytes(); }) m.arena_bytes = executor_.arena_bytes();
    if constexpr (requires { executor_.workspace_bytes(); })
      m.workspace_bytes = executor_.workspace_bytes();
    m.batch = executor_.capacity();
    return m;
  }
  plan::MemoryReport fit_memory_report() const override {
    const std::size_t rows = executor_.capacity();
    return rows > 0 ? memory_report(rows) : plan::MemoryReport{};
  }

 private:
  void require_compiled(const char* what) const {
    if (!optimizer_)
      throw error(fmt::format("{}: call compile(optimizer, loss, metrics...) first", what));
  }

  // Whether the backend trains on 8-bit images (the CUDA backend: not yet).
  static constexpr bool reads_pixels =
      requires(executor_type & e, const std::uint8_t* x, const std::int32_t* y) {
    e.begin_step(x, y, std::size_t{1}, std::int64_t{0});
  };
  // Whether the backend reads batches of B's input element. Every backend reads floats (a
  // requires-expression on them trips nvcc 13).
  template <class B>
  static constexpr bool reads_inputs_of = !data::PixelBatch<B> || reads_pixels;
  template <class X>
  static constexpr bool reads_inputs_of_element = std::is_same_v<X, float> || reads_pixels;
  template <class B>
  static constexpr void static_assert_reads() {
    static_assert(reads_inputs_of<std::remove_cvref_t<B>>,
                  "Model: this backend reads float batches only (the CUDA backend does not take "
                  "8-bit images yet): use mo::cpu, or batches of floats");
  }

  // Raises memopt::error unless a sample of `b` has the model's Input shape: the width of a
  // float row; an image's height, width and channels (their product for an Input<N>).
  template <class B>
  static void check_input(const B& b, const char* what) {
    if constexpr (data::PixelBatch<B>) {
      constexpr Shape in = spec::shapes[0];
      const std::size_t h = b.height(), w = b.width(), c = b.channels();
      if (in.is_image() && (h != in.height() || w != in.width() || c != in.channels()))
        throw error(
            fmt::format("{}: the model's Input is {} x {} x {}, the batch's images are {} "
                        "x {} x {} (decode at the model's shape: "
                        "data::image_directory<Model>, data::image_options_for<Model>)",
                        what, in.height(), in.width(), in.channels(), h, w, c));
      if (!in.is_image() && h * w * c != spec::inputs)
        throw error(
            fmt::format("{}: the model's Input has {} features, the batch's images have "
                        "{} x {} x {} = {} values",
                        what, spec::inputs, h, w, c, h * w * c));
    } else if (static_cast<std::size_t>(b.width()) != spec::inputs) {
      throw error(fmt::format("{}: the model's Input has {} features, the batch has {}", what,
                              spec::inputs, b.width()));
    }
  }

  // The outputs for one image of `h x w x c` bytes, checked against the Input as a batch's.
  std::vector<float> predict_image(std::span<const std::uint8_t> pixels, std::size_t h,
                                   std::size_t w, std::size_t c,
                                   const std::string& what = "predict",
                                   const char* found = "the image is") {
    static_assert_reads<data::ImageBatch>();
    constexpr Shape in = spec::shapes[0];
    if (in.is_image() && (h != in.height() || w != in.width() || c != in.channels()))
      throw error(fmt::format("{}: the model's Input is {} x {} x {}, {} {} x {} x {}", what,
                              in.height(), in.width(), in.channels(), found, h, w, c));
    if (!in.is_image() && h * w * c != spec::inputs)
      throw error(fmt::format("{}: the model's Input has {} features, {} {} x {} x {} = {} values",
                              what, spec::inputs, found, h, w, c, h * w * c));
    if (pixels.size() != h * w * c)
      throw error(fmt::format("{}: expected {} x {} x {} = {} pixel values, found {}", what, h, w,
                              c, h * w * c, pixels.size()));
    std::vector<float> out(spec::outputs);
    executor_.predict(pixels.data(), 1, out.data());
    return out;
  }

  // predict(file)'s options without any given: the Input's height and width, grayscale for
  // one channel and RGB for three (Options is data::ImageDirectoryOptions).
  template <class Options>
  static Options model_image_options() {
    constexpr Shape in = spec::shapes[0];
    static_assert(in.is_image() && (in.channels() == 1 || in.channels() == 3),
                  "Model::predict(file): without options, the model's Input must be an image "
                  "Input<H, W, 1> (grayscale) or Input<H, W, 3> (RGB); pass decoding options "
                  "otherwise");
    Options o{};
    o.image_size = {static_cast<int>(in.height()), static_cast<int>(in.width())};
    using ColorMode = decltype(o.color_mode);
    o.color_mode = in.channels() == 1 ? ColorMode::grayscale : ColorMode::rgb;
    return o;
  }

  template <class B>
  static std::size_t check_batch(const B& b, const char* what) {
    const std::size_t rows = static_cast<std::size_t>(b.size());
    check_input(b, what);
    if constexpr (data::FloatTargetBatch<B>) {
      if (static_cast<std::size_t>(b.target_width()) != spec::outputs)
        throw error(
            fmt::format("{}: the model has {} outputs, so each row needs {} targets; the "
                        "batch has {} per row",
                        what, spec::outputs, spec::outputs, b.target_width()));
      if (data::input_values(b).size() != rows * spec::inputs ||
          std::span<const float>(b.targets()).size() != rows * spec::outputs)
        throw error(fmt::format("{}: a batch of {} rows must hold {} features and {} targets", what,
                                rows, rows * spec::inputs, rows * spec::outputs));
    } else if (data::input_values(b).size() != rows * spec::inputs ||
               std::span<const std::int32_t>(b.labels()).size() != rows) {
      throw error(fmt::format("{}: a batch of {} rows must hold {} features and {} labels", what,
                              rows, rows * spec::inputs, rows));
    }
    return rows;
  }

  // Feeds `watch` the running loss of every step the backend can report without waiting:
  // on the CPU, the step just run; on CUDA, with watch_losses on, the steps the device has
  // finished. True when a step's loss is first found not finite.
  bool watch_losses(train::NonfiniteLossWatch& watch) override {
    bool found = false;
    executor_.poll_losses([&](int step, double loss_sum, std::size_t samples) {
      found = watch.observe(step, loss_sum, samples) || found;
    });
    return found;
  }

  std::string optimizer_name() const { return std::string(optimizer_.name()); }
  // The optimizer's slots, then the gradient accumulator's sums when it has them (Keras's
  // name for that variable): the blocks of the optimizer state, as checkpoints name them.
  std::vector<std::string> state_slot_names() const {
    std::vector<std::string> names = optimizer_.slot_names();
    if (accumulation_steps_ > 1) names.emplace_back("gradient_accumulator");
    return names;
  }

  static std::vector<ParameterRange> parameter_ranges() {
    return detail::parameter_ranges(spec::tables());
  }

  // Stores the optimizer type-erased, and the training step instantiated for its type: the
  // CPU backend calls its update directly, the CUDA backend's fused kernel sees SGD or Adam.
  template <Optimizer Opt>
  void set_optimizer(Opt optimizer) {
    if constexpr (requires { optimizer.build(std::span<const ParameterRange>{}); })
      optimizer.build(parameter_ranges());
    // A number that callbacks may set is saved with the checkpoint; a schedule is the
    // iteration count's function, which is saved anyway.
    learning_rate_settable_ = requires {
      optimizer.set_learning_rate(0.0);
    };
    if constexpr (requires { optimizer.options.learning_rate.is_schedule(); })
      learning_rate_settable_ = !optimizer.options.learning_rate.is_schedule();
    // Keras's gradient_accumulation_steps: the sums follow the optimizer's slots in its state
    // (float32 beside the parameters, not in the arena), as one more slot.
    const int accumulation_steps = detail::gradient_accumulation_steps(optimizer);
    if (accumulation_steps > 1 && !train::SteppedExecutor<executor_type>)
      throw error(fmt::format(
          "Model::compile: gradient_accumulation_steps = {} runs on the mo::cpu backend only; "
          "the {} backend applies every batch's update inside its step",
          accumulation_steps, executor_type::backend_name));
    accumulation_steps_ = accumulation_steps;
    if constexpr (train::SteppedExecutor<executor_type>)
      executor_.set_gradient_accumulation(accumulation_steps_);
    optimizer_ = AnyOptimizer(std::move(optimizer));
    state_floats_ = (optimizer_.slots() + (accumulation_steps_ > 1 ? 1 : 0)) * parameter_count;
    executor_.prepare(0, state_floats_);
    if (optimizer_.has_initial_state()) {
      std::vector<float> state(state_floats_);
      optimizer_.initialize_state(
          std::span<float>(state).first(optimizer_.slots() * parameter_count));
      executor_.set_optimizer_state(state);
    }
  }
  // The checks compile() makes of a loss against the last layer: at compile time what the
  // types tell (the loss's own check_last), at run time its from_logits option.
  template <class L>
  static void check_loss(const L& loss) {
    constexpr ActivationKind last = spec::activations[spec::depth - 1];
    if constexpr (requires { L::template check_last<last>(); }) L::template check_last<last>();
    if constexpr (detail::LossOnLogits<L>) {
      if (from_logits(loss) && last != ActivationKind::linear)
        throw error(
            fmt::format("Model::compile: the last layer applies {}, so the loss must not use "
                        "from_logits=true (found from_logits=true)",
                        activation_title(last)));
      if constexpr (!detail::LossOnOutputs<L>)
        if (!from_logits(loss) && last == ActivationKind::linear)
          throw error(fmt::format(
              "Model::compile: {} needs probabilities: end the model with Dense<N, {}>, or use "
              "a Linear last layer with from_logits=true",
              L::name, activation_title(L::logits_of)));
    }
  }
  static std::string_view activation_title(ActivationKind k) {
    switch (k) {
      case ActivationKind::softmax:
        return "Softmax";
      case ActivationKind::sigmoid:
        return "Sigmoid";
      case ActivationKind::relu:
        return "ReLU";
      case ActivationKind::tanh:
        return "Tanh";
      case ActivationKind::gelu:
        return "GELU";
      default:
        return "Linear";
    }
  }

  // A batch's targets, untyped, with what they are; run_step and run_evaluate check them
  // against the loss's target_type.
  struct Targets {
    const void* data = nullptr;
    bool floats = false;
  };
  template <class B>
  static Targets targets_of(const B& b) {
    if constexpr (data::FloatTargetBatch<B>)
      return {std::span<const float>(b.targets()).data(), true};
    else
      return {std::span<const std::int32_t>(b.labels()).data(), false};
  }
  void check_targets(const Targets& y, const char* what) const {
    if (y.floats == loss_reads_floats_) return;
    if (loss_reads_floats_)
      throw error(fmt::format(
          "{}: the loss {} reads float targets, {} per row; the batches hold class indices: "
          "add `| mo::data::one_hot({})` before batching, or use SparseCategoricalCrossentropy",
          what, loss_name_, spec::outputs, spec::outputs));
    throw error(
        fmt::format("{}: the loss {} reads class indices; the batches hold float targets: use "
                    "CategoricalCrossentropy for one-hot rows",
                    what, loss_name_));
  }

  template <class Opt, class L, class X>
  void step_with(const X* x, const void* y, std::size_t rows) {
    const auto* targets = static_cast<const typename L::target_type*>(y);
    const Opt& opt = *optimizer_.template target<Opt>();
    if constexpr (train::SteppedExecutor<executor_type>) {
      train::training_step(executor_, x, targets, rows, opt, *std::any_cast<L>(&loss_), iterations_,
                           loss_scale_, predictions_for(rows));
      update_metrics(targets, rows);
    } else {
      train::training_step(executor_, x, targets, rows, opt, iterations_, loss_scale_);
    }
  }
  template <class L, class X>
  void evaluate_with(const X* x, const void* y, std::size_t rows) {
    const auto* targets = static_cast<const typename L::target_type*>(y);
    if constexpr (train::SteppedExecutor<executor_type>) {
      executor_.evaluate_batch(*std::any_cast<L>(&loss_), x, targets, rows, predictions_for(rows));
      update_metrics(targets, rows);
    } else {
      executor_.evaluate_batch(x, targets, rows);
    }
  }

  // Metrics other than Accuracy read the activated outputs, which the loss head writes here.
  template <class M>
  void add_metric(const M& metric) {
    if constexpr (!std::same_as<M, metrics::Accuracy>) metrics_.emplace_back(metric);
  }
  template <class M, class Target>
  static constexpr bool reads_targets_of = std::same_as<M, metrics::Accuracy> ||
                                           requires(M& m, const MetricBatch<Target>& b) {
    m.update_state(b);
  };
  float* predictions_for(std::size_t rows) {
    if (metrics_.empty()) return nullptr;
    if (predictions_.size() < rows * spec::outputs) predictions_.resize(rows * spec::outputs);
    return predictions_.data();
  }
  template <class Target>
  void update_metrics(const Target* y, std::size_t rows) {
    if (metrics_.empty()) return;
    const MetricBatch<Target> b{predictions_.data(), rows, spec::outputs, y,
                                std::is_same_v<Target, float> ? spec::outputs : 1};
    for (AnyMetric& m : metrics_) m.update_state(b);
  }
  // One training step through the compiled optimizer and loss, on float rows or 8-bit images.
  void run_step(const float* x, Targets y, std::size_t rows) {
    check_targets(y, "fit");
    (this->*float_step_)(x, y.data, rows);
  }
  void run_step(const std::uint8_t* x, Targets y, std::size_t rows) {
    check_targets(y, "fit");
    if constexpr (reads_pixels) (this->*pixel_step_)(x, y.data, rows);
  }
  // Before compile(), evaluate measures SparseCategoricalCrossentropy on class indices.
  template <class X>
  void run_evaluate(const X* x, Targets y, std::size_t rows) {
    if (!float_evaluate_) {
      if (y.floats) require_compiled("evaluate");
      if constexpr (reads_inputs_of_element<X>)
        executor_.evaluate_batch(x, static_cast<const std::int32_t*>(y.data), rows);
      return;
    }
    check_targets(y, "evaluate");
    if constexpr (std::is_same_v<X, float>)
      (this->*float_evaluate_)(x, y.data, rows);
    else if constexpr (reads_pixels)
      (this->*pixel_evaluate_)(x, y.data, rows);
  }

  // train::Trainee: what fit_loop asks of this model --------------------------------------

  std::string fit_description() const override {
    const std::string optimizer =
        std::string(optimizer_.name()) +
        (accumulation_steps_ > 1
             ? fmt::format(" gradient_accumulation_steps {}", accumulation_steps_)
             : std::string());
    return detail::fit_description(spec::tables(), P::name, optimizer, Caps::first_bytes,
                                   Caps::rest_bytes, metrics_);
  }
  void share_chief_state(distributed::FitSync& sync) override {
    // Each rank's sums are its own part of the update, which rank 0's broadcast would
    // overwrite: a data-parallel fit starts between updates.
    if (sync && accumulation_steps_ > 1 && sync.any(accumulated_batches() != 0))
      sync.fail_together(fmt::format(
          "fit: data parallelism starts between updates, but a rank holds batches summed toward "
          "the next update (gradient_accumulation_steps = {}; left by an earlier fit or a "
          "checkpoint saved mid-update): give each epoch a multiple of {} batches, or train "
          "that run on one rank",
          accumulation_steps_, accumulation_steps_));
    sync.share_chief_state(*this);
  }
  int accumulated_batches() const {
    if constexpr (train::SteppedExecutor<executor_type>)
      return executor_.gradient_accumulation().batches();
    else
      return 0;
  }
  void set_position(int epochs, int batches) override {
    completed_epochs_ = epochs;
    epoch_batches_ = batches;
  }
  std::span<AnyMetric> fit_metrics() override { return metrics_; }
  bool reports_accuracy() const override { return report_accuracy_; }
  std::size_t checked_rows(const data::BatchRef& b) const override { return check_batch(b, "fit"); }
  std::size_t checked_rows(const data::PixelBatchRef& b) const override {
    return check_batch(b, "fit");
  }
  std::size_t checked_rows(const data::TargetBatchRef& b) const override {
    return check_batch(b, "fit");
  }
  void train_step(const data::BatchRef& b, std::size_t rows) override { train_on(b, rows); }
  void train_step(const data::PixelBatchRef& b, std::size_t rows) override { train_on(b, rows); }
  void train_step(const data::TargetBatchRef& b, std::size_t rows) override { train_on(b, rows); }
  template <class B>
  void train_on(const B& b, std::size_t rows) {
    if (rows > executor_.capacity()) executor_.prepare(rows, state_floats_);
    run_step(data::input_values(b).data(), targets_of(b), rows);
  }
  void begin_steps(bool watch) override {
    (void)executor_.take_totals();
    executor_.watch_losses(watch);
  }
  StepTotals take_totals() override { return executor_.take_totals(); }
  const StepTotals* running_totals() const override { return executor_.running_totals(); }
  void end_epoch(const distributed::FitSync& sync) override {
    if constexpr (spec::state_count > 0) {
      if (sync) {
        std::vector<float> moving = get_state_weights();
        sync.average(moving);
        set_state_weights(moving);
      }
    }
    // A backend that keeps the step count and loss scale on its device (CUDA) hands back the
    // true values here, once per epoch: skipped updates included.
    executor_.synchronize(iterations_, loss_scale_);
  }
  Evaluation validate(const data::AnyBatches& batches, const distributed::FitSync& sync) override {
    return evaluate_batches(batches, sync);
  }

  // With `sync` (validation in a data-parallel fit), the loss, accuracy and metrics are over
  // every rank's batches.
  Evaluation evaluate_batches(const data::AnyBatches& batches,
                              const distributed::FitSync& sync = {}) {
    (void)executor_.take_totals();  // start from zero whatever ran before
    // Evaluation has metrics of its own, so that validation leaves the epoch's alone.
    std::vector<AnyMetric> training_metrics = metrics_;
    for (AnyMetric& m : metrics_) m.reset_state();
    struct Restore {
      std::vector<AnyMetric>& metrics;
      std::vector<AnyMetric>& kept;
      ~Restore() { metrics = std::move(kept); }
    } restore{metrics_, training_metrics};
    batches.for_each([&]<class B>(const B& b) {
      if constexpr (reads_inputs_of<B>) {
        const std::size_t rows = check_batch(b, "evaluate");
        if (rows) run_evaluate(data::input_values(b).data(), targets_of(b), rows);
      } else {
        throw error(
            "evaluate: expected batches of floats, found 8-bit images (the CUDA backend "
            "does not take them yet: use mo::cpu, or batches of floats)");
      }
    });
    const StepTotals t = sync.global(executor_.take_totals());
    for (AnyMetric& m : metrics_) sync.sum(m.state());
    Evaluation e{t.mean_loss(), t.accuracy(), {}};
    for (const AnyMetric& m : metrics_) e.metrics[std::string(m.name())] = m.result();
    return e;
  }

  // For the length of a data-parallel fit: rank() answers from `sync`, and the executor
  // averages the gradients across ranks through it, bucket by bucket.
  struct DistributedScope {
    Model& model;
    distributed::BucketReducer reducer;
    DistributedScope(Model& m, distributed::FitSync& sync)
        : model(m), reducer(sync, {gradient_buckets.begin(), gradient_buckets.end()}) {
      if (!sync) return;
      if (updates_in_backward_v<P>)
        sync.fail_together(std::string(detail::update_in_backward_data_parallel));
      if (!executor_type::reduces_gradients)
        sync.fail_together(
            "fit: data parallelism (FitOptions::communicator) runs on the CPU backend only "
            "for now");
      m.executor_.set_gradient_reducer(&reducer);
      m.fit_sync_ = &sync;
    }
    ~DistributedScope() {
      if (!model.fit_sync_) return;
      model.fit_sync_ = nullptr;
      model.executor_.set_gradient_reducer(nullptr);
    }
    DistributedScope(const DistributedScope&) = delete;
    DistributedScope& operator=(const DistributedScope&) = delete;
  };

  executor_type executor_{};
  const distributed::FitSync* fit_sync_ = nullptr;  // during a data-parallel fit
  AnyOptimizer optimizer_{};
  std::vector<AnyMetric> metrics_{};  // compiled metrics other than Accuracy
  std::vector<float> predictions_{};  // the last batch's activated outputs, for metrics_
  std::any loss_{};  // the compiled loss, of the type the step functions below were made for
  std::string_view loss_name_{};
  bool loss_reads_floats_ = false;
  void (Model::*float_step_)(const float*, const void*, std::size_t) = nullptr;
  void (Model::*pixel_step_)(const std::uint8_t*, const void*, std::size_t) = nullptr;
  void (Model::*float_evaluate_)(const float*, const void*, std::size_t) = nullptr;
  void (Model::*pixel_evaluate_)(const std::uint8_t*, const void*, std::size_t) = nullptr;
  bool learning_rate_settable_ = false;
  loss_scale_type loss_scale_{};
  std::int64_t iterations_ = 0;
  int completed_epochs_ = 0;
  int epoch_batches_ = 0;  // batches of epoch completed_epochs_ trained
  std::size_t state_floats_ = 0;
  int accumulation_steps_ = 1;  // the compiled optimizer's gradient_accumulation_steps
  bool report_accuracy_ = false;
};

}  // namespace memopt
