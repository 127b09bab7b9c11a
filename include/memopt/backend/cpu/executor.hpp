#pragma once
// The CPU executor: runs a model's training and inference plans in host memory.
//
// It is the reference every other backend is tested against, so it favours clarity: one
// arena laid out by the constexpr plan, one LayerKernel per node (backend/cpu/layers/), float
// math throughout. Under 16-bit policies the arena holds 16-bit activations (the memory really
// halves) and kernels read them through float scratch, as tensor cores accumulate in float.
// The order of the steps is not here: train/step.hpp walks the plan's schedule and calls the
// step functions below.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "memopt/backend/cpu/dnnl/threads.hpp"
#include "memopt/backend/cpu/flush_denormals.hpp"
#include "memopt/backend/cpu/host_buffer.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/loss_head.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/backend.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/gradient_reducer.hpp"
#include "memopt/core/random.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/plan/aux_layout.hpp"
#include "memopt/plan/step_plans.hpp"
#include "memopt/train/gradient_accumulation.hpp"
#include "memopt/train/losses/sparse_categorical_crossentropy.hpp"
#include "memopt/train/optimizer.hpp"

namespace memopt::cpu_backend {

/// Runs `Spec`'s plans on the host.
template <class Spec>
class Executor {
 public:
  using T = typename Spec::compute_type;
  using spec = Spec;
  static constexpr std::size_t depth = Spec::depth;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  /// UpdateInBackward: each node's parameters are updated after its last backward step
  /// (update_in_backward<I>), from a gradient buffer of its own; finish_step only counts.
  static constexpr bool updates_in_backward = plan::graph_of<Spec>().update_in_backward;
  static constexpr std::string_view backend_name = "cpu";
  /// summary()'s line on oneDNN's threads for the calling thread.
  static std::string threads_summary() { return onednn::threads_summary(); }

  Executor()
      : params_(Spec::parameter_count * sizeof(float)),
        working_(narrow ? Spec::parameter_count * sizeof(T) : 0),
        state_weights_(Spec::state_count * sizeof(float)),
        head_scratch_(2 * Spec::outputs * sizeof(float)) {}

  // Weights and optimizer state --------------------------------------------------------------

  void set_parameters(std::span<const float> values) {
    check_size("set_parameters", values.size(), Spec::parameter_count);
    std::copy(values.begin(), values.end(), params_.as<float>());
    refresh_working_copy();
  }
  void get_parameters(std::span<float> out) const {
    check_size("get_parameters", out.size(), Spec::parameter_count);
    std::copy_n(params_.as<float>(), Spec::parameter_count, out.begin());
  }
  /// Non-trainable weights (BatchNormalization's moving statistics), laid out by the spec.
  void set_state_weights(std::span<const float> values) {
    check_size("set_state_weights", values.size(), Spec::state_count);
    std::copy(values.begin(), values.end(), state_weights_.as<float>());
  }
  void get_state_weights(std::span<float> out) const {
    check_size("get_state_weights", out.size(), Spec::state_count);
    std::copy_n(state_weights_.as<float>(), Spec::state_count, out.begin());
  }
  std::size_t optimizer_state_size() const { return state_.size() / sizeof(float); }
  void set_optimizer_state(std::span<const float> values) {
    check_size("set_optimizer_state", values.size(), optimizer_state_size());
    std::copy(values.begin(), values.end(), state_.as<float>());
  }
  void get_optimizer_state(std::span<float> out) const {
    check_size("get_optimizer_state", out.size(), optimizer_state_size());
    std::copy_n(state_.as<float>(), optimizer_state_size(), out.begin());
  }

  /// The parameter gradients of the last training step, unscaled, laid out like the
  /// parameters (for tests and for comparing backends).
  void get_gradients(std::span<float> out) const {
    check_size("get_gradients", out.size(), Spec::parameter_count);
    if (capacity_ == 0) throw error("Executor::get_gradients: no training step has run");
    if constexpr (updates_in_backward)
      throw error(
          "Executor::get_gradients: under UpdateInBackward no step keeps every gradient (each "
          "layer's dies at its update)");
    else
      std::copy_n(gradients(), Spec::parameter_count, out.begin());
  }

  /// Data parallelism's seam: the reducer hears of each node's gradients as backward writes
  /// them (gradients_ready), and finish_step has it reduce them all before it unscales and
  /// checks them (distributed/bucket_reducer.hpp). Null: one process, and nothing is called.
  void set_gradient_reducer(GradientReducer* reducer) {
    if (updates_in_backward && reducer)
      throw error(std::string(::memopt::detail::update_in_backward_data_parallel));
    gradient_reducer_ = reducer;
  }
  static constexpr bool reduces_gradients = true;

  /// Updates from the mean gradient of `steps` batches (Keras's gradient_accumulation_steps;
  /// train/gradient_accumulation.hpp): the sums are the last `parameter_count` floats of the
  /// optimizer state, so prepare() must be given them (Model does), and checkpoints save them.
  void set_gradient_accumulation(int steps) {
    if (updates_in_backward && steps > 1)
      throw error(::memopt::detail::update_in_backward_accumulation("the optimizer", steps));
    accumulation_ = GradientAccumulation(steps);
  }
  const GradientAccumulation& gradient_accumulation() const { return accumulation_; }
  GradientAccumulation& gradient_accumulation() { return accumulation_; }

  /// Every optimizer runs here (train::Executor's check); under UpdateInBackward, those that
  /// update one layer's part at a time (SliceOptimizer) and need no gradient of another layer
  /// (global_clipnorm) nor of another batch (gradient_accumulation_steps).
  template <class Opt>
  static void check_optimizer(const Opt& opt) {
    if constexpr (updates_in_backward) {
      static_assert(SliceOptimizer<Opt>,
                    "UpdateInBackward: the optimizer must update one layer's parameters at a "
                    "time: give it update(w, g, state, iteration, mo::ParameterSlice) (see "
                    "memopt/train/optimizer.hpp); every optimizer of the library has it");
      if constexpr (requires { opt.options.global_clipnorm; })
        if (opt.options.global_clipnorm != 0)
          throw error("Model::compile: " + std::string(Opt::name) +
                      "'s global_clipnorm = " + std::to_string(opt.options.global_clipnorm) +
                      " scales every gradient by the norm of all of them, known only after the "
                      "last layer's gradient, when UpdateInBackward has updated the layers "
                      "above; use clipnorm (per tensor), or drop UpdateInBackward");
      if constexpr (requires { opt.options.gradient_accumulation_steps; })
        if (opt.options.gradient_accumulation_steps > 1)
          throw error(::memopt::detail::update_in_backward_accumulation(
              Opt::name, opt.options.gradient_accumulation_steps));
    } else {
      (void)opt;
    }
  }

  /// The seed of the model's random streams during training (Dropout's masks).
  void set_seed(std::uint64_t seed) { seed_ = seed; }

  /// Allocates the training arena for up to `capacity` rows and `state_floats` of optimizer
  /// state, and prepares every kernel for that many rows. The allocations of training happen
  /// here, and in the first step of each other batch size (a last partial batch), where the
  /// kernels of library primitives make theirs for that size.
  void prepare(std::size_t capacity, std::size_t state_floats) {
    if (capacity > capacity_) {
      plan_ = plan::training_plan<Spec>(capacity);
      arena_ = HostBuffer(plan_.arena_bytes);
      capacity_ = capacity;
      prepare_kernels(capacity);
    }
    if (state_floats * sizeof(float) != state_.size())
      state_ = HostBuffer(state_floats * sizeof(float));
  }
  std::size_t capacity() const { return capacity_; }
  std::size_t arena_bytes() const { return arena_.size(); }
  /// Scratch the kernels share: oneDNN's scratchpads and the float copies that 16-bit values
  /// are read through. Its size is known once the kernels are prepared (oneDNN tells it then),
  /// so it is reported beside the static arena rather than inside it.
  std::size_t workspace_bytes() const { return scratch_.size(); }

  // The steps of a training step, called in the plan's order by train::training_step -------

  /// Held for the whole step: subnormal floats flushed to zero (x86 handles them in
  /// microcode; Adam's decayed moments produce them), as TensorFlow and PyTorch do.
  ScopedFlushDenormals step_scope() const { return {}; }

  /// Loads a batch of `rows` samples (floats, or 8-bit pixels converted as they are loaded) for
  /// update number `iteration`; what follows works on it. The targets `y` (a class index per
  /// row, or `outputs` floats per row) are read where they are, until the step ends.
  template <InputElement X, TargetElement Y>
  void begin_step(const X* x, const Y* y, std::size_t rows, std::int64_t iteration) {
    check_rows(rows);
    if (rows != prepared_rows_) prepare_kernels(rows);
    rows_ = rows;
    step_finite_ = true;
    // Counted in batches, so that the batches of one accumulated update draw different
    // Dropout masks; without accumulation this is the update number.
    const auto batch =
        static_cast<std::uint64_t>(iteration) * static_cast<std::uint64_t>(accumulation_.steps()) +
        static_cast<std::uint64_t>(accumulation_.batches());
    step_seed_ = Rng(seed_ ^ batch * 0xbf58476d1ce4e5b9ull).next();
    targets_ = y;
    convert(x, at<T>(plan::BufferRole::input), rows * Spec::inputs);
    if constexpr (std::is_same_v<Y, std::int32_t>)
      std::copy_n(y, rows, at<std::int32_t>(plan::BufferRole::labels));
  }

  template <std::size_t I>
  void forward() {
    std::get<I>(kernels_).forward(forward_io<I>(Pass::training));
  }

  template <std::size_t I>
  void recompute() {
    if constexpr (Spec::nodes[I].activation == ActivationKind::gelu) {
      // GELU keeps z for its derivative: its output is one element-wise pass away.
      constexpr std::size_t w = Spec::dims[I + 1], ld = plan::gelu_aux_ld(w);
      const T* pre = at<T>(plan::BufferRole::pre_activation, int(I));
      T* out = at<T>(plan::BufferRole::recomputed_activation, int(I));
      for (std::size_t r = 0; r < rows_; ++r)
        for (std::size_t u = 0; u < w; ++u)
          out[r * w + u] = T(GELU::apply(static_cast<float>(pre[r * ld + u])));
    } else {
      std::get<I>(kernels_).forward(forward_io<I>(Pass::recompute));
    }
  }

  /// The loss over the last layer's output and its gradient (times the loss scale) by the
  /// last layer's pre-activation, which replaces it; the activated outputs go to
  /// `predictions` (rows x outputs) when it is given, for metrics.
  template <Loss L>
  void loss(const L& loss, float scale, float* predictions = nullptr) {
    float* logits = at<float>(plan::BufferRole::logits, int(depth) - 1);
    const HeadSums sums = run_head(loss, logits, targets_as<L>(), rows_, &scale, predictions);
    float* s = scalars();
    s[0] = static_cast<float>(sums.loss);
    s[1] = static_cast<float>(sums.correct);
    if constexpr (narrow)
      convert(logits, at<T>(plan::BufferRole::logits_grad, int(depth) - 1), rows_ * Spec::outputs);
  }
  /// SparseCategoricalCrossentropy, fused with a Softmax or on a Linear layer's logits.
  void loss(float scale) { loss(default_loss(), scale); }

  template <std::size_t I>
  void weight_grad() {
    std::get<I>(kernels_).weight_grad(backward_io<I>());
  }
  template <std::size_t I>
  void input_grad() {
    std::get<I>(kernels_).input_grad(backward_io<I>());
    static_for<Spec::nodes[I].input_count>([&](auto k) { sum_branch_grad<I, k>(); });
  }
  /// UpdateInBackward: called by the step loop after node I's last backward step, which has
  /// written its gradients: unscales them and, if they are finite, applies the optimizer to
  /// node I's parameters, with the step's update number (finish_step advances it once).
  /// Nothing reads node I's weights later in the step: the nodes below run their backward
  /// and recomputation with their own.
  template <std::size_t I, class Optimizer, class LossScale>
  void update_in_backward(const Optimizer& opt, std::int64_t iterations, const LossScale& scale) {
    static_assert(updates_in_backward);
    constexpr std::size_t offset = Spec::nodes[I].parameter_offset;
    constexpr std::size_t count = Spec::nodes[I].parameters;
    // (Without a SliceOptimizer, check_optimizer has said so at compile().)
    if constexpr (count > 0 && SliceOptimizer<Optimizer>) {
      float* grads = node_gradients<I>();
      const float unscale = 1.0f / scale.value();
      bool finite = true;
      for (std::size_t i = 0; i < count; ++i) {
        grads[i] *= unscale;
        finite &= std::isfinite(grads[i]);
      }
      if (!finite) {
        // The layers above are already updated: this one is left as it is, and the step is
        // reported skipped (the ordinary step would have skipped every layer).
        step_finite_ = false;
        return;
      }
      opt.update(std::span<float>(params_.as<float>() + offset, count),
                 std::span<float>(grads, count),
                 std::span<float>(state_.as<float>(), optimizer_state_size()), iterations,
                 ParameterSlice{offset, Spec::parameter_count});
      if constexpr (narrow) convert(params_.as<float>() + offset, working_.as<T>() + offset, count);
    }
  }

  /// Called by the step loop after node I's last backward step: its gradients are final.
  template <std::size_t I>
  void gradients_ready() {
    // With accumulation the reducer sums the update's sums once, in finish_step; under
    // UpdateInBackward there is no reducer (set_gradient_reducer refuses one).
    if constexpr (!updates_in_backward)
      if (gradient_reducer_ && !accumulation_.enabled())
        gradient_reducer_->gradients_ready(I, std::span<float>(gradients(), Spec::parameter_count),
                                           rows_);
  }

  /// Unscales the gradients and, if all are finite, applies the optimizer (with gradient
  /// accumulation: adds them to the sums, and applies the mean of every `steps` finite
  /// batches; a non-finite batch is skipped and not counted, as Keras's LossScaleOptimizer
  /// skips it); then adds the step's loss and accuracy to the totals. Under UpdateInBackward
  /// the layers are already updated: it advances the update number once, or counts the step
  /// skipped when a layer's gradients were not finite.
  template <class Optimizer, class LossScale>
  void finish_step(const Optimizer& opt, std::int64_t& iterations, LossScale& scale) {
    if constexpr (updates_in_backward)
      finish_updated_step(iterations, scale);
    else
      finish_whole_step(opt, iterations, scale);
    float* s = scalars();
    totals_.loss_sum += s[0];
    totals_.correct += s[1];
    totals_.samples += rows_;
    ++trained_steps_;
  }

  // Inference ------------------------------------------------------------------------------

  /// Forward and loss only, accumulated into the totals (for evaluate and validation); the
  /// activated outputs go to `predictions` when it is given.
  template <Loss L, InputElement X>
  void evaluate_batch(const L& loss, const X* x, const typename L::target_type* y, std::size_t rows,
                      float* predictions = nullptr) {
    float* logits = const_cast<float*>(infer(x, rows));
    const HeadSums sums = run_head(loss, logits, y, rows, nullptr, predictions);
    totals_.loss_sum += sums.loss;
    totals_.correct += sums.correct;
    totals_.samples += rows;
  }
  template <InputElement X>
  void evaluate_batch(const X* x, const std::int32_t* y, std::size_t rows) {
    evaluate_batch(default_loss(), x, y, rows);
  }

  /// The outputs after the last layer's activation (probabilities after a Softmax or a
  /// Sigmoid), `rows x outputs`, row after row.
  template <InputElement X>
  void predict(const X* x, std::size_t rows, float* out) {
    const float* logits = infer(x, rows);
    for (std::size_t r = 0; r < rows; ++r)
      activate_row<last_activation>(logits + r * Spec::outputs, out + r * Spec::outputs,
                                    Spec::outputs);
  }

  StepTotals take_totals() {
    const StepTotals t = totals_;
    totals_ = {};
    trained_steps_ = polled_steps_ = 0;
    return t;
  }
  /// The sums since the last take_totals, without resetting them (fit's running logs); never
  /// null on the host.
  const StepTotals* running_totals() const { return &totals_; }

  /// The host knows each step's loss as soon as it ends: nothing to switch on.
  void watch_losses(bool /*on*/) {}
  /// Calls `f(step, loss_sum, samples)` for the last training step if it ended after the
  /// previous poll (`step` counts from 0 at take_totals; the sums are the running totals).
  template <class F>
  void poll_losses(F&& f) {
    if (polled_steps_ == trained_steps_) return;
    polled_steps_ = trained_steps_;
    f(trained_steps_ - 1, totals_.loss_sum, totals_.samples);
  }
  /// The step count and loss scale live on the host, in the caller's variables.
  template <class LossScale>
  void synchronize(std::int64_t& /*iterations*/, LossScale& /*scale*/) {}

 private:
  using plan_type = decltype(plan::training_plan<Spec>(1));
  using inference_plan_type = decltype(plan::inference_plan<Spec>(1));
  static constexpr auto graph_ = plan::graph_of<Spec>();

  template <std::size_t... Is>
  static auto kernel_tuple(std::index_sequence<Is...>)
      -> std::tuple<LayerKernel<typename Spec::template node_layer<Is>, Spec, Is>...>;
  using kernels_type = decltype(kernel_tuple(std::make_index_sequence<depth>{}));

  // What a forward pass is for: training keeps what backward reads (the ReLU mask, GELU's
  // z, saved buffers), inference keeps nothing, recompute writes a Recompute node's second
  // copy.
  enum class Pass { training, inference, recompute };

  static void check_size(const char* what, std::size_t found, std::size_t expected) {
    if (found != expected)
      throw error(std::string("Executor::") + what + ": expected " + std::to_string(expected) +
                  " floats, found " + std::to_string(found));
  }
  void check_rows(std::size_t rows) const {
    if (rows == 0 || rows > capacity_)
      throw error("train_step: a batch of " + std::to_string(rows) +
                  " rows does not fit the arena planned for " + std::to_string(capacity_));
  }

  // UpdateInBackward's end of a step: the layers are updated; the step counts once.
  template <class LossScale>
  void finish_updated_step(std::int64_t& iterations, LossScale& scale) {
    scalars()[2] = step_finite_ ? 1.0f : 0.0f;
    if (scale.update(step_finite_))
      ++iterations;
    else
      ++totals_.skipped_steps;
    step_finite_ = true;
  }
  // The ordinary end of a step: every gradient at once.
  template <class Optimizer, class LossScale>
  void finish_whole_step(const Optimizer& opt, std::int64_t& iterations, LossScale& scale) {
    float* grads = gradients();
    if (gradient_reducer_ && !accumulation_.enabled())
      gradient_reducer_->reduce(std::span<float>(grads, Spec::parameter_count), rows_);
    const float unscale = 1.0f / scale.value();
    bool finite = true;
    for (std::size_t i = 0; i < Spec::parameter_count; ++i) {
      grads[i] *= unscale;
      finite &= std::isfinite(grads[i]);
    }
    // Every rank skips the batch when any rank's is not finite, so that all count alike.
    if (gradient_reducer_ && accumulation_.enabled())
      finite = gradient_reducer_->all_finite(finite);
    float* s = scalars();
    s[2] = finite ? 1.0f : 0.0f;
    const std::span<float> g(grads, Spec::parameter_count);
    const std::size_t sums = accumulation_.enabled() ? Spec::parameter_count : 0;
    if (sums > optimizer_state_size())
      throw error("Executor::finish_step: gradient accumulation needs " + std::to_string(sums) +
                  " floats of sums after the optimizer's slots; prepare() "
                  "was given " +
                  std::to_string(optimizer_state_size()) + " floats of state");
    if (scale.update(finite)) {
      if (!accumulation_.enabled() || accumulate(g)) {
        // The gradients are the optimizer's to overwrite (clipping); nothing reads them after.
        update_all(opt, g, std::span<float>(state_.as<float>(), optimizer_state_size() - sums),
                   iterations);
        ++iterations;
        refresh_working_copy();
      }
    } else {
      ++totals_.skipped_steps;
    }
  }

  // Applies the optimizer to every parameter from `g`, layer by layer as UpdateInBackward
  // does, so that the two give the same bits: the optimizers' packet math (Eigen's sqrt) is
  // not the bits of their scalar code, and which elements take which depends on where an
  // update's part starts. global_clipnorm, which UpdateInBackward refuses, needs every
  // gradient at once.
  template <class Optimizer>
  void update_all(const Optimizer& opt, std::span<float> g, std::span<float> state,
                  std::int64_t iteration) {
    const std::span<float> w(params_.as<float>(), Spec::parameter_count);
    bool whole = !SliceOptimizer<Optimizer>;
    if constexpr (requires { opt.options.global_clipnorm; })
      whole = whole || opt.options.global_clipnorm != 0;
    if (whole) {
      opt.update(w, g, state, iteration);
      return;
    }
    if constexpr (SliceOptimizer<Optimizer>)
      static_for<depth>([&](auto i) {
        constexpr std::size_t offset = Spec::nodes[i].parameter_offset;
        constexpr std::size_t count = Spec::nodes[i].parameters;
        if constexpr (count > 0)
          opt.update(w.subspan(offset, count), g.subspan(offset, count), state, iteration,
                     ParameterSlice{offset, Spec::parameter_count});
      });
  }

  // Adds the batch's gradients `g` to the sums; when the update is due, makes `g` its mean
  // over every row (every rank's, under data parallelism: one all-reduce an update).
  bool accumulate(std::span<float> g) {
    const std::span<float> sums(state_.as<float>() + optimizer_state_size() - Spec::parameter_count,
                                Spec::parameter_count);
    if (!accumulation_.accumulate(g, rows_, sums)) return false;
    std::uint64_t rows = accumulation_.rows();
    if (gradient_reducer_) gradient_reducer_->reduce_sums(sums, rows);
    accumulation_.take_mean(g, sums, rows);
    return true;
  }

  // Makes every kernel ready for batches of `rows` and the shared scratch large enough: for
  // what each kernel asks, and for the float copy through which any input gradient takes the
  // derivative of the activation below (apply_activation_grad).
  void prepare_kernels(std::size_t rows) {
    std::size_t bytes = 0;
    static_for<depth>([&](auto i) {
      static_assert(NodeKernel<std::tuple_element_t<i, kernels_type>, T>,
                    "cpu backend: a layer kernel lacks prepare(rows), scratch_bytes(rows) or "
                    "forward(io)");
      std::get<i>(kernels_).prepare(rows);
      bytes = std::max({bytes, std::get<i>(kernels_).scratch_bytes(rows),
                        activation_grad_scratch_bytes<Spec, i>(rows)});
    });
    if (bytes > scratch_.size()) scratch_ = HostBuffer(bytes);
    prepared_rows_ = rows;
  }

  void refresh_working_copy() {
    if constexpr (narrow) convert(params_.as<float>(), working_.as<T>(), Spec::parameter_count);
  }
  const T* weights() const {
    if constexpr (narrow)
      return working_.as<T>();
    else
      return params_.as<float>();
  }

  template <class U>
  U* at(plan::BufferRole role, int node = -1, int slot = 0) const {
    return reinterpret_cast<U*>(arena_.data() + plan_.find(role, node, slot).offset);
  }
  template <class U>
  U* at_if(plan::BufferRole role, int node, int slot = 0) const {
    return plan_.contains(role, node, slot) ? at<U>(role, node, slot) : nullptr;
  }
  float* gradients() const { return at<float>(plan::BufferRole::parameter_grads); }
  // Node I's parameters' gradients: its own buffer under UpdateInBackward, else its part of
  // the whole step's.
  template <std::size_t I>
  float* node_gradients() const {
    if constexpr (updates_in_backward)
      return at<float>(plan::BufferRole::parameter_grads, int(I));
    else
      return gradients() + Spec::nodes[I].parameter_offset;
  }
  float* scalars() const { return at<float>(plan::BufferRole::step_scalars); }

  // The output of hidden node j (-1: the model's input) as backward and recomputation read it.
  T* kept_output(int j) const {
    if (j < 0) return at<T>(plan::BufferRole::input);
    return at<T>(graph_.nodes[std::size_t(j)].recompute ? plan::BufferRole::recomputed_activation
                                                        : plan::BufferRole::activation,
                 j);
  }
  // The output of node j (-1: the model's input) as forward reads it.
  T* forward_output(int j) const {
    return j < 0 ? at<T>(plan::BufferRole::input) : at<T>(plan::BufferRole::activation, j);
  }

  // Where node I's input gradient for its input K goes, with the derivative of that input's
  // activation: the input node's output gradient, or a branch_grad when another node's input
  // gradient has written that first (a residual's other branch).
  template <std::size_t I, std::size_t K>
  void bind_input_grad(T*& dx, ActivationGrad<T>& below) const {
    using plan::BufferRole;
    if constexpr (graph_.passes_gradient(I, K)) {
      constexpr int j = Spec::nodes[I].sources[K];
      constexpr ActivationKind act = Spec::input_activation(I, K);
      dx = graph_.writes_gradient_first(I, K) ? at<T>(BufferRole::activation_grad, j)
                                              : at<T>(BufferRole::branch_grad, int(I), int(K));
      below.kind = act;
      below.derivative = ActivationGrad<T>::template derivative_of<act>();
      below.width = Spec::nodes[j].out.size();
      below.relu_mask = at_if<std::uint8_t>(BufferRole::relu_mask, j);
      below.pre_activation = at_if<T>(BufferRole::pre_activation, j);
      if (act == ActivationKind::sigmoid || act == ActivationKind::tanh)
        below.output = kept_output(j);
    }
  }
  // Adds node I's second gradient for its input K into that input's output gradient.
  template <std::size_t I, std::size_t K>
  void sum_branch_grad() {
    if constexpr (graph_.passes_gradient(I, K) && !graph_.writes_gradient_first(I, K)) {
      constexpr int j = Spec::nodes[I].sources[K];
      const T* branch = at<T>(plan::BufferRole::branch_grad, int(I), int(K));
      T* total = at<T>(plan::BufferRole::activation_grad, j);
      const std::size_t n = rows_ * Spec::nodes[j].out.size();
      for (std::size_t v = 0; v < n; ++v)
        total[v] = T(static_cast<float>(total[v]) + static_cast<float>(branch[v]));
    }
  }

  template <std::size_t I>
  auto forward_io(Pass pass) const {
    using plan::BufferRole;
    constexpr bool last = I + 1 == depth;
    using Out = std::conditional_t<last, float, T>;
    constexpr int n = static_cast<int>(I);
    ForwardIo<T, Out> io;
    io.rows = rows_;
    constexpr NodeInfo node = Spec::nodes[I];
    io.x = pass == Pass::recompute ? kept_output(node.sources[0]) : forward_output(node.sources[0]);
    if constexpr (node.input_count == 2) io.x2 = forward_output(node.sources[1]);
    if constexpr (last)
      io.y = at<float>(BufferRole::logits, n);
    else
      io.y = at<T>(
          pass == Pass::recompute ? BufferRole::recomputed_activation : BufferRole::activation, n);
    // A Recompute node writes its mask when it is recomputed; GELU's z always in training,
    // since the recomputation reads it.
    if (pass == Pass::training) io.pre_activation = at_if<T>(BufferRole::pre_activation, n);
    if ((pass == Pass::training && !graph_.nodes[I].recompute) || pass == Pass::recompute)
      io.relu_mask = at_if<std::uint8_t>(BufferRole::relu_mask, n);
    if (pass == Pass::training)
      for (int k = 0; k < 2; ++k)
        io.saved[std::size_t(k)] = at_if<std::byte>(BufferRole::saved, n, k);
    io.params = params_.as<float>() + Spec::nodes[I].parameter_offset;
    io.weights = weights() + Spec::nodes[I].parameter_offset;
    io.state = state_weights_.as<float>() + Spec::nodes[I].state_offset;
    io.training = pass != Pass::inference;
    io.update_state = pass == Pass::training;
    io.seed = step_seed_;
    io.scratch = scratch_.as<float>();
    return io;
  }

  template <std::size_t I>
  BackwardIo<T> backward_io() const {
    using plan::BufferRole;
    constexpr int n = static_cast<int>(I);
    BackwardIo<T> io;
    io.rows = rows_;
    io.x = kept_output(Spec::nodes[I].sources[0]);
    if constexpr (I + 1 == depth) {
      if constexpr (narrow)
        io.dy = at<T>(BufferRole::logits_grad, n);
      else
        io.dy = at<float>(BufferRole::logits, n);
    } else {
      io.dy = at<T>(BufferRole::activation_grad, n);
    }
    bind_input_grad<I, 0>(io.dx, io.below);
    bind_input_grad<I, 1>(io.dx2, io.below2);
    for (int k = 0; k < 2; ++k)
      io.saved[std::size_t(k)] = at_if<std::byte>(BufferRole::saved, n, k);
    io.params = params_.as<float>() + Spec::nodes[I].parameter_offset;
    io.weights = weights() + Spec::nodes[I].parameter_offset;
    io.state = state_weights_.as<float>() + Spec::nodes[I].state_offset;
    if constexpr (Spec::nodes[I].parameters > 0) io.grads = node_gradients<I>();
    io.seed = step_seed_;
    io.scratch = scratch_.as<float>();
    return io;
  }

  static constexpr ActivationKind last_activation = Spec::activations[depth - 1];
  static SparseCategoricalCrossentropy default_loss() {
    return SparseCategoricalCrossentropy{{.from_logits = !Spec::ends_in_softmax}};
  }
  template <class L>
  const typename L::target_type* targets_as() const {
    return static_cast<const typename L::target_type*>(targets_);
  }
  template <class L>
  HeadSums run_head(const L& loss, float* logits, const typename L::target_type* y,
                    std::size_t rows, const float* scale, float* predictions) {
    return run_loss_head<last_activation>(loss, logits, y, rows, Spec::outputs, scale, predictions,
                                          head_scratch_.as<float>());
  }

  // Forward through the inference plan; returns the logits (rows x outputs).
  template <InputElement X>
  const float* infer(const X* x, std::size_t rows) {
    if (rows > inference_capacity_) {
      inference_plan_ = plan::inference_plan<Spec>(rows);
      inference_arena_ = HostBuffer(inference_plan_.arena_bytes);
      inference_capacity_ = rows;
    }
    if (rows != prepared_rows_) prepare_kernels(rows);
    convert(x, inference_buffer<T>(plan::BufferRole::input, -1), rows * Spec::inputs);
    return infer_loaded(rows);
  }
  // The layers after the input is loaded: once for float rows and 8-bit pixels alike.
  const float* infer_loaded(std::size_t rows) {
    static_for<depth>([&](auto i) {
      constexpr bool last = i + 1 == depth;
      using Out = std::conditional_t<last, float, T>;
      ForwardIo<T, Out> io;
      io.rows = rows;
      constexpr NodeInfo node = Spec::nodes[i];
      io.x = inference_input(node.sources[0]);
      if constexpr (node.input_count == 2) io.x2 = inference_input(node.sources[1]);
      io.y = inference_buffer<Out>(last ? plan::BufferRole::logits : plan::BufferRole::activation,
                                   int(i));
      io.params = params_.as<float>() + Spec::nodes[i].parameter_offset;
      io.weights = weights() + Spec::nodes[i].parameter_offset;
      io.state = state_weights_.as<float>() + Spec::nodes[i].state_offset;
      io.scratch = scratch_.as<float>();
      std::get<i>(kernels_).forward(io);
    });
    return inference_buffer<float>(plan::BufferRole::logits, int(depth) - 1);
  }
  T* inference_input(int j) {
    return j < 0 ? inference_buffer<T>(plan::BufferRole::input, -1)
                 : inference_buffer<T>(plan::BufferRole::activation, j);
  }
  template <class U>
  U* inference_buffer(plan::BufferRole role, int node) {
    return reinterpret_cast<U*>(inference_arena_.data() + inference_plan_.find(role, node).offset);
  }

  HostBuffer params_;         // float32 master weights
  HostBuffer working_;        // their 16-bit copy under mixed policies
  HostBuffer state_weights_;  // non-trainable weights
  HostBuffer state_;          // optimizer slots
  HostBuffer arena_;
  HostBuffer inference_arena_;
  HostBuffer scratch_;
  HostBuffer head_scratch_;  // the loss head's two rows
  plan_type plan_{};
  inference_plan_type inference_plan_{};
  kernels_type kernels_{};
  std::size_t capacity_ = 0;
  std::size_t inference_capacity_ = 0;
  std::size_t rows_ = 0;
  std::size_t prepared_rows_ = 0;  // the batch size the kernels are ready for
  std::uint64_t seed_ = 0;
  std::uint64_t step_seed_ = 0;
  const void* targets_ = nullptr;  // the step's targets, of the loss's target_type
  StepTotals totals_{};
  int trained_steps_ = 0;                        // training steps since take_totals
  int polled_steps_ = 0;                         // of those, reported by poll_losses
  GradientReducer* gradient_reducer_ = nullptr;  // data parallelism's, during its fit
  GradientAccumulation accumulation_{};
  bool step_finite_ = true;  // UpdateInBackward: every layer's gradients so far were finite
};

}  // namespace memopt::cpu_backend

namespace memopt {

template <class Spec>
struct executor_for<cpu, Spec> {
  using type = cpu_backend::Executor<Spec>;
};

}  // namespace memopt
