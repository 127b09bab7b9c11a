#pragma once
// The CUDA executor: runs a model's training and inference plans on one GPU.
//
// A training step is one CUDA graph, captured once per batch size: the batch is read from
// pinned host memory into the arena, each Dense layer is one cuBLASLt product whose epilogue
// adds the bias and applies the activation (and, in training, keeps the ReLU mask or the GELU
// input), the loss is one kernel (softmax, cross-entropy, gradient, the last bias gradient,
// the correct count), backward is two products per layer (dW, and dX with the previous
// activation's derivative and bias gradient in its epilogue), and the update is a check of
// every gradient followed by one pass over all parameters. The iteration count, the loss
// scale and the epoch's totals live on the device, so a step never waits for the host.
//
// Memory: one allocation for the arena the planner laid out (on the padded widths, see
// device_layout.hpp), one for the parameters, their optimizer state, their 16-bit working
// copy and a few kilobytes of control values and reduction scratch, with cuBLASLt's workspace.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "memopt/backend/cuda/control.hpp"
#include "memopt/backend/cuda/cublaslt.hpp"
#include "memopt/backend/cuda/device_buffer.hpp"
#include "memopt/backend/cuda/device_layout.hpp"
#include "memopt/backend/cuda/element_type.hpp"
#include "memopt/backend/cuda/epilogue_math.hpp"
#include "memopt/backend/cuda/event.hpp"
#include "memopt/backend/cuda/graph.hpp"
#include "memopt/backend/cuda/kernels/activation.cuh"
#include "memopt/backend/cuda/kernels/grid_reduce.cuh"
#include "memopt/backend/cuda/kernels/input.cuh"
#include "memopt/backend/cuda/kernels/loss.cuh"
#include "memopt/backend/cuda/kernels/optimizer.cuh"
#include "memopt/backend/cuda/launch_limits.hpp"
#include "memopt/backend/cuda/layer_support.hpp"
#include "memopt/backend/cuda/matmul.hpp"
#include "memopt/backend/cuda/status.hpp"
#include "memopt/backend/cuda/stream.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/gradient_reducer.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/plan/buffer.hpp"
#include "memopt/plan/step_plans.hpp"
#include "memopt/train/loss_scale.hpp"
#include "memopt/train/optimizers.hpp"

namespace memopt::cuda_backend {

namespace detail {

// The largest power of two up to 256 that divides `byte_offset`: the alignment of a pointer
// that far into a 256-byte aligned allocation.
constexpr std::uint32_t alignment_of(std::size_t byte_offset) {
  std::uint32_t a = 256;
  while (a > 1 && byte_offset % a != 0) a /= 2;
  return a;
}

// An optimizer's options as the device sees them.
struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::sgd;
  double learning_rate = 0, beta_1 = 0, beta_2 = 0, epsilon = 0, momentum = 0;
  bool nesterov = false;
  bool operator==(const OptimizerSettings&) const = default;
};

// The learning rate is a number here (check_optimizer): its value at any iteration.
inline OptimizerSettings settings_of(const SGD& o) {
  return {OptimizerKind::sgd, o.learning_rate(0), 0, 0, 0, o.options.momentum, o.options.nesterov};
}
inline OptimizerSettings settings_of(const Adam& o) {
  return {OptimizerKind::adam,
          o.learning_rate(0),
          o.options.beta_1,
          o.options.beta_2,
          o.options.epsilon,
          0,
          false};
}

// The iteration count and loss scale as the host last saw them.
struct Counters {
  std::int64_t iterations = 0;
  float scale = 1.0f;
  std::int32_t good_steps = 0;
  std::int32_t growth_interval = 0;
  bool operator==(const Counters&) const = default;
};

template <class LossScale>
Counters counters_of(std::int64_t iterations, const LossScale& s) {
  Counters c;
  c.iterations = iterations;
  c.scale = s.value();
  if constexpr (requires {
                  s.good_steps;
                  s.growth_interval;
                }) {
    c.good_steps = s.good_steps;
    c.growth_interval = s.growth_interval;
  }
  return c;
}

template <class LossScale>
constexpr bool is_dynamic_v = requires(LossScale s) {
  s.scale;
  s.good_steps;
  s.growth_interval;
};

inline unsigned grid_for(std::size_t items, std::size_t cap = 4096) {
  const std::size_t blocks = (items + kernels::block_threads - 1) / kernels::block_threads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, cap));
}

}  // namespace detail

/// Runs `Spec`'s plans on the current CUDA device. Same interface as
/// `cpu_backend::Executor<Spec>`, plus `train_step_device` (a batch already on the device),
/// `synchronize` (the device's iteration count and loss scale back to the caller) and
/// `run_matmuls_only` (for benchmarks).
///
/// ```cpp
/// mo::cuda_backend::Executor<Spec> ex;
/// ex.set_parameters(weights);
/// ex.prepare(256, 2 * Spec::parameter_count);          // Adam: two slots
/// ex.train_step(x, y, 256, mo::Adam{}, iterations, scale);
/// mo::StepTotals t = ex.take_totals();                 // waits for the device here only
/// ```
template <class Spec>
class Executor {
  static_assert(supports_v<Spec>);

 public:
  using spec = Spec;
  using T = typename Spec::compute_type;
  using Layout = DeviceLayout<Spec>;
  static constexpr std::size_t depth = Spec::depth;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  static constexpr std::string_view backend_name = "cuda";

  static_assert(Layout::chain().parameter_count() == Layout::parameter_count,
                "cuda Executor: the planner's parameter count must match the device layout");
  static_assert(Layout::dims[depth] <= kernels::max_loss_classes,
                "cuda Executor: at most 12248 outputs (the loss kernel keeps one bias gradient "
                "per output in 48 KiB of shared memory)");

  Executor() : mirror_(sizeof(DeviceControl), "Executor: control mirror") { allocate_state(0); }

  // Buffers the device may still be reading (the pinned staging) are released only after the
  // queued work is done.
  ~Executor() {
    if (stream_.get()) (void)cudaStreamSynchronize(stream_.get());
  }
  Executor(Executor&&) noexcept = default;
  Executor& operator=(Executor&&) noexcept = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// What the fused update runs: SGD's and Adam's rules with a number as learning rate.
  /// Schedules, clipping and weight decay (per-tensor norms and names) run on the CPU backend
  /// for now. Model::compile calls this, so that the misuse shows there.
  template <class Opt>
  static void check_optimizer(const Opt& opt) {
    static_assert(std::is_same_v<Opt, SGD> || std::is_same_v<Opt, Adam>,
                  "cuda Executor: the fused update kernel runs mo::SGD and mo::Adam; train "
                  "with this optimizer on the mo::cpu backend");
    if (opt.options.learning_rate.is_schedule() || memopt::detail::BaseSteps::active(opt.options))
      throw error(std::string("cuda Executor: ") + std::string(Opt::name) +
                  " with a learning-rate schedule, clipping or weight decay runs on the mo::cpu "
                  "backend only; the fused update takes a number as learning rate and none of "
                  "clipnorm, clipvalue, global_clipnorm or weight_decay");
  }

  // Parameters and optimizer state ------------------------------------------------------

  /// Dropout's seed on the CPU; no layer that the CUDA backend runs draws random numbers.
  void set_seed(std::uint64_t) {}

  void set_parameters(std::span<const float> values) {
    check_size("set_parameters", values.size(), Spec::parameter_count);
    std::vector<float> padded(Layout::parameter_count);
    Layout::pack(values.data(), padded.data());
    upload(params(), padded.data(), padded.size() * sizeof(float), "set_parameters");
    if constexpr (narrow) {
      std::vector<T> working(Layout::parameter_count);
      for (std::size_t j = 0; j < working.size(); ++j) working[j] = T(padded[j]);
      upload(working_copy(), working.data(), working.size() * sizeof(T), "set_parameters");
    }
    stream_.synchronize("set_parameters");
  }
  void get_parameters(std::span<float> out) const {
    check_size("get_parameters", out.size(), Spec::parameter_count);
    download_unpacked(params(), out.data(), "get_parameters");
  }
  std::size_t optimizer_state_size() const { return slots_ * Spec::parameter_count; }
  void set_optimizer_state(std::span<const float> values) {
    check_size("set_optimizer_state", values.size(), optimizer_state_size());
    std::vector<float> padded(Layout::parameter_count);
    for (std::size_t s = 0; s < slots_; ++s) {
      Layout::pack(values.data() + s * Spec::parameter_count, padded.data());
      upload(optimizer_state() + s * Layout::parameter_count, padded.data(),
             padded.size() * sizeof(float), "set_optimizer_state");
      stream_.synchronize("set_optimizer_state");  // `padded` is reused for the next slot
    }
  }
  void get_optimizer_state(std::span<float> out) const {
    check_size("get_optimizer_state", out.size(), optimizer_state_size());
    for (std::size_t s = 0; s < slots_; ++s)
      download_unpacked(optimizer_state() + s * Layout::parameter_count,
                        out.data() + s * Spec::parameter_count, "get_optimizer_state");
  }

  /// The parameter gradients of the last training step, unscaled, laid out like the
  /// parameters. Valid until the next training step.
  void get_gradients(std::span<float> out) const {
    check_size("get_gradients", out.size(), Spec::parameter_count);
    if (capacity_ == 0) throw error("Executor::get_gradients: no training step has run");
    download_unpacked(grads(), out.data(), "get_gradients");
    const float inv = read_control().step.inv_scale;
    if (inv != 1.0f)
      for (float& g : out) g *= inv;
  }

  /// Allocates the training arena for up to `capacity` rows and `state_floats` of optimizer
  /// state. The arena is checked against the device's free memory first, then cuBLASLt's
  /// algorithms for `capacity` rows are chosen, then the arena is allocated. The only device
  /// allocations of training happen here; one that does not fit says how many bytes it
  /// needed and how many were free.
  void prepare(std::size_t capacity, std::size_t state_floats) {
    if (state_floats % Spec::parameter_count != 0)
      throw error("Executor::prepare: optimizer state must be a whole number of slots of " +
                  std::to_string(Spec::parameter_count) + " floats, found " +
                  std::to_string(state_floats));
    const std::size_t slots = state_floats / Spec::parameter_count;
    if (slots != slots_) allocate_state(slots);
    if (capacity > capacity_) {
      const plan_type p = Layout::training_plan(capacity);
      // Before any heuristic query: a batch larger than the device must say so in bytes, not
      // surface as whatever cuBLASLt reports for a product it cannot size.
      require_free_memory(
          p.arena_bytes, arena_.size(),
          "prepare: the training arena for a batch of " + std::to_string(capacity) + " rows");
      (void)training_program(capacity);
      stream_.synchronize("prepare");
      clear_graphs();
      arena_ = DeviceBuffer();  // release the smaller arena before asking for the larger one
      arena_ = DeviceBuffer(p.arena_bytes, "prepare: the training arena for a batch of " +
                                               std::to_string(capacity) + " rows");
      plan_ = p;
      capacity_ = capacity;
      ensure_staging(capacity);
    }
  }
  std::size_t capacity() const { return capacity_; }
  /// Bytes of the training arena (activations, gradients, masks of one step).
  std::size_t arena_bytes() const { return plan_.arena_bytes; }
  /// cuBLASLt's workspace.
  std::size_t workspace_bytes() const { return matmul_workspace_bytes; }
  /// Every byte of device memory this executor holds.
  std::size_t device_bytes() const {
    return arena_.size() + state_.size() + inference_arena_.size();
  }

  /// With `on`, every product with an epilogue runs as cuBLASLt's plain product followed by
  /// memopt's own kernels (bias, activation, ReLU mask, GELU input, bias gradient): the path
  /// a layer takes when cuBLASLt's heuristic has no algorithm for its epilogue, forced so
  /// that tests can check it on any GPU. Applies to every step queued after the call.
  ///
  /// ```cpp
  /// ex.force_epilogue_fallback(true);
  /// ex.prepare(256, 0);
  /// assert(ex.layer_path(0).starts_with("fallback"));
  /// ```
  void force_epilogue_fallback(bool on) {
    if (on == force_fallback_) return;
    stream_.synchronize("force_epilogue_fallback");
    clear_graphs();
    training_programs_.clear();
    inference_programs_.clear();
    fallback_bits_ = {};
    force_fallback_ = on;
  }

  /// How layer `i`'s products ran, over the programs built so far (prepare builds the
  /// training one): "epilogue" when each used cuBLASLt's fused epilogue, else "fallback"
  /// naming the products that ran plain with memopt's kernels behind them, e.g.
  /// "fallback (forward, dX)". Under 16-bit policies ", bias gradient 16-bit" marks a dX
  /// whose bias gradient cuBLASLt could not write in float32 (it is widened afterwards).
  /// For summary().
  std::string layer_path(std::size_t i) const {
    if (i >= depth)
      throw error("Executor::layer_path: expected a layer below " + std::to_string(depth) +
                  ", found " + std::to_string(i));
    const unsigned bits = fallback_bits_[i];
    std::string path;
    constexpr std::array<std::pair<unsigned, const char*>, 4> parts = {
        {{fell_back_forward, "forward"},
         {fell_back_recompute, "recompute"},
         {fell_back_input_grad, "dX"},
         {fell_back_inference, "inference"}}};
    for (const auto& [bit, name] : parts)
      if (bits & bit) path += (path.empty() ? "fallback (" : ", ") + std::string(name);
    path = path.empty() ? "epilogue" : path + ")";
    if (bits & bias_grad_16bit) path += ", bias gradient 16-bit";
    return path;
  }

  // Steps -------------------------------------------------------------------------------

  /// One training step on `rows` samples from host memory. Returns once the step is queued;
  /// `iterations` and `scale` advance as if the update was applied (the device keeps the
  /// truth: `synchronize` reads it back, as fit does at the end of each epoch).
  template <class Optimizer, class LossScale>
  void train_step(const float* x, const std::int32_t* y, std::size_t rows, const Optimizer& opt,
                  std::int64_t& iterations, LossScale& scale) {
    check_rows(rows);
    check_labels(y, rows);
    Slot& s = stage(x, y, rows);
    run_step(rows, s.device_x(), s.device_y(), opt, iterations, scale);
    s.done.record(stream_.get());
    if (watching_) watch_step();
  }

  /// With `on`, each train_step from now on also copies the running loss sum (since the last
  /// take_totals) into pinned host memory behind the step, so that poll_losses can report the
  /// finished steps without waiting for the device (fit's terminate_on_nan). Either way,
  /// steps watched before are forgotten.
  void watch_losses(bool on) {
    watching_ = on;
    // Steps watched before (a fit stopped by an error) are not this caller's: forget them.
    watch_head_ = watch_count_ = 0;
    watch_finished_.clear();
    if (on && watch_sums_.size() == 0)
      watch_sums_ = PinnedBuffer(watch_depth * sizeof(double), "Executor: loss watch");
  }

  /// Calls `f(step, loss_sum, samples)` for each watched step the device has finished, oldest
  /// first, without waiting: `step` counts the steps since the last take_totals from 0, and
  /// `loss_sum` and `samples` are the running totals after it.
  template <class F>
  void poll_losses(F&& f) {
    for (const WatchedLoss& w : watch_finished_) f(w.step, w.loss_sum, w.samples);
    watch_finished_.clear();
    while (watch_count_ > 0) {
      const WatchEntry& e = watch_ring_[watch_head_];
      const cudaError_t status = cudaEventQuery(e.done.get());
      if (status == cudaErrorNotReady) return;
      check(status, "cudaEventQuery", "poll_losses");
      const WatchedLoss w = take_oldest_watched();
      f(w.step, w.loss_sum, w.samples);
    }
  }

  /// The same with the batch already in device memory (`x`: rows x inputs floats, `y`: rows
  /// labels), as a data set uploaded once would be. Labels are checked on the device: one
  /// outside [0, outputs) raises `memopt::error` at the next take_totals.
  template <class Optimizer, class LossScale>
  void train_step_device(const float* x, const std::int32_t* y, std::size_t rows,
                         const Optimizer& opt, std::int64_t& iterations, LossScale& scale) {
    check_rows(rows);
    run_step(rows, x, y, opt, iterations, scale);
  }

  /// Forward and loss only, accumulated into the totals (for evaluate and validation).
  void evaluate_batch(const float* x, const std::int32_t* y, std::size_t rows) {
    check_labels(y, rows);
    Slot& s = stage(x, y, rows);
    float* logits = infer(s.device_x(), rows);
    launch_loss<float>(kernels::LossMode::evaluate, logits, nullptr, s.device_y(), rows, nullptr,
                       nullptr, "evaluate_batch");
    s.done.record(stream_.get());
    samples_ += rows;
  }

  /// Probabilities (softmax of the outputs when the last layer is Softmax, else the raw
  /// outputs), `rows x outputs`, row after row.
  void predict(const float* x, std::size_t rows, float* out) {
    Slot& s = stage(x, nullptr, rows);
    float* logits = infer(s.device_x(), rows);
    if constexpr (Spec::ends_in_softmax)
      launch_loss<float>(kernels::LossMode::probabilities, logits, nullptr, nullptr, rows, nullptr,
                         nullptr, "predict");
    check(cudaMemcpy2DAsync(out, Spec::outputs * sizeof(float), logits,
                            Layout::dims[depth] * sizeof(float), Spec::outputs * sizeof(float),
                            rows, cudaMemcpyDeviceToHost, stream_.get()),
          "cudaMemcpy2DAsync", "predict");
    s.done.record(stream_.get());
    stream_.synchronize("predict");
  }

  /// The sums since the last call. Waits for every queued step: the one place an epoch
  /// synchronises with the device.
  StepTotals take_totals() {
    const DeviceControl c = read_control();
    check(cudaMemsetAsync(&control()->totals, 0, sizeof(DeviceTotals), stream_.get()),
          "cudaMemsetAsync", "take_totals");
    StepTotals t;
    t.loss_sum = c.totals.loss_sum;
    t.correct = c.totals.correct;
    t.samples = samples_;
    t.skipped_steps = static_cast<std::size_t>(c.totals.skipped_steps);
    samples_ = 0;
    watch_steps_ = 0;  // steps queued before keep their numbers in the watch ring
    if (c.totals.label_errors != 0)
      throw error("SparseCategoricalCrossentropy: " + std::to_string(c.totals.label_errors) +
                  " labels were outside [0, " + std::to_string(Spec::outputs) + ")");
    return t;
  }
  /// The running sums are on the device: not known without waiting (train::Executor).
  const StepTotals* running_totals() const { return nullptr; }

  /// Data parallelism runs on the CPU backend only for now: no reducer is taken.
  static constexpr bool reduces_gradients = false;
  void set_gradient_reducer(GradientReducer* reducer) {
    if (reducer != nullptr)
      throw error("cuda Executor: data parallelism runs on the mo::cpu backend only for now");
  }

  /// Writes the device's iteration count and loss scale into the caller's (they differ from
  /// what train_step reported when the device skipped an update).
  template <class LossScale>
  void synchronize(std::int64_t& iterations, LossScale& scale) {
    if (!uploaded_) return;  // no step has run: the caller's values are the truth
    const TrainSettings s = read_control().settings;
    iterations = s.iterations;
    if constexpr (detail::is_dynamic_v<LossScale>) {
      scale.scale = s.scale;
      scale.good_steps = s.good_steps;
    }
    expected_ = detail::counters_of(iterations, scale);
  }

  /// Runs only the cuBLASLt products of a training step at `rows` (captured as one graph
  /// like a step): what a step would cost with no kernels of memopt's own. For benchmarks;
  /// the arena holds whatever the last step left.
  void run_matmuls_only(std::size_t rows) {
    check_rows(rows);
    graph_for<SGD>(rows, nullptr, nullptr, true, 0).launch(stream_.get(), "run_matmuls_only");
  }

  /// Waits for everything queued.
  void wait() const { stream_.synchronize("Executor::wait"); }
  cudaStream_t stream() const { return stream_.get(); }

 private:
  using plan_type = decltype(Layout::training_plan(1));
  using inference_plan_type = decltype(Layout::inference_plan(1));
  static constexpr std::size_t P = Layout::parameter_count;
  static constexpr plan::Chain<depth> chain = Layout::chain();

  // Where each part of the state allocation starts (bytes, each 256-byte aligned).
  struct StateLayout {
    std::size_t params = 0, working = 0, state = 0, control = 0, partial_floats = 0,
                partial_doubles = 0, bias16 = 0, workspace = 0, total = 0;
  };

  // Offsets (elements) of each hidden layer's 16-bit bias gradient, where cuBLASLt writes it
  // when it cannot write float32 (see TrainingProgram::bias_grad_float).
  static constexpr std::array<std::size_t, depth + 1> bias16_offsets = [] {
    std::array<std::size_t, depth + 1> o{};
    for (std::size_t i = 0; i < depth; ++i)
      o[i + 1] = o[i] + (i + 1 < depth ? Layout::dims[i + 1] : 0);
    return o;
  }();
  static constexpr std::size_t widest = [] {
    std::size_t w = 0;
    for (std::size_t i = 1; i <= depth; ++i) w = std::max(w, Layout::dims[i]);
    return w;
  }();

  static StateLayout state_layout(std::size_t slots) {
    StateLayout l;
    std::size_t end = 0;
    const auto take = [&](std::size_t bytes) {
      const std::size_t at = end;
      end = plan::align_up(end + bytes);
      return at;
    };
    l.params = take(P * sizeof(float));
    l.working = take(narrow ? P * sizeof(T) : 0);
    l.state = take(slots * P * sizeof(float));
    l.control = take(sizeof(DeviceControl));
    l.partial_floats = take(kernels::max_reduce_blocks * widest * sizeof(float));
    l.partial_doubles = take(kernels::max_reduce_blocks * 2 * sizeof(double));
    l.bias16 = take(narrow ? bias16_offsets[depth] * sizeof(T) : 0);
    l.workspace = take(matmul_workspace_bytes);
    l.total = end;
    return l;
  }

  // cuBLASLt products of one layer at one batch size.
  struct LayerMatmuls {
    std::optional<Matmul> forward, recompute, weight_grad, input_grad;
    // Whether input_grad's bias-gradient epilogue writes float32 straight into the parameter
    // gradients; else it writes the compute type into the bias16 scratch, widened later.
    bool bias_grad_float = true;
    // Whether the product ran plain, its epilogue in memopt's kernels (see `product`).
    bool forward_fallback = false, recompute_fallback = false, input_grad_fallback = false;
  };
  struct TrainingProgram {
    std::size_t rows = 0;
    std::array<LayerMatmuls, depth> layers;
    kernels::WidenTable<T, depth> widen{};
  };
  struct InferenceProgram {
    std::size_t rows = 0;
    std::array<std::optional<Matmul>, depth> forward;
    std::array<bool, depth> fallback{};
  };
  struct CachedGraph {
    std::size_t rows = 0;
    const float* x = nullptr;
    const std::int32_t* y = nullptr;
    OptimizerKind kind = OptimizerKind::sgd;
    bool matmuls_only = false;
    std::size_t opt_slots = 0;  // state slots the optimizer uses (SGD: 0 without momentum)
    GraphExec exec;
  };
  // Pinned host memory a batch is staged in; the step reads it directly. Two, used in turn,
  // so that the host fills one while the device reads the other.
  struct Slot {
    PinnedBuffer memory;
    std::size_t rows = 0;
    Event done;
    float* x() const { return memory.template as<float>(); }
    std::int32_t* y() const { return memory.template as<std::int32_t>(labels_offset(rows)); }
    const float* device_x() const { return memory.template device_as<float>(); }
    const std::int32_t* device_y() const {
      return memory.template device_as<std::int32_t>(labels_offset(rows));
    }
    static std::size_t labels_offset(std::size_t r) {
      return plan::align_up(r * Spec::inputs * sizeof(float));
    }
  };

  enum class Pass { train_forward, recompute, inference };

  // The loss watch: a ring of the last steps' running loss sums on their way to the host.
  // fit polls after every step and stage() keeps the host within two steps of the device,
  // so the ring does not fill; if a caller never polls, the oldest step is waited for and
  // kept on the host.
  static constexpr std::size_t watch_depth = 8;
  struct WatchEntry {
    Event done{};
    int step = 0;
    std::size_t samples = 0;
  };
  struct WatchedLoss {
    int step = 0;
    double loss_sum = 0;
    std::size_t samples = 0;
  };

  void watch_step() {
    if (watch_count_ == watch_depth) {
      watch_ring_[watch_head_].done.synchronize();
      watch_finished_.push_back(take_oldest_watched());
    }
    const std::size_t k = (watch_head_ + watch_count_) % watch_depth;
    WatchEntry& e = watch_ring_[k];
    check(cudaMemcpyAsync(watch_sums_.data() + k * sizeof(double), &control()->totals.loss_sum,
                          sizeof(double), cudaMemcpyDeviceToHost, stream_.get()),
          "cudaMemcpyAsync", "train_step (loss watch)");
    e.done.record(stream_.get());
    e.step = static_cast<int>(watch_steps_);
    e.samples = samples_;
    ++watch_count_;
    ++watch_steps_;
  }

  // The oldest entry of the ring, finished; removed from the ring.
  WatchedLoss take_oldest_watched() {
    const WatchEntry& e = watch_ring_[watch_head_];
    WatchedLoss w{e.step, 0.0, e.samples};
    std::memcpy(&w.loss_sum, watch_sums_.data() + watch_head_ * sizeof(double), sizeof(double));
    watch_head_ = (watch_head_ + 1) % watch_depth;
    --watch_count_;
    return w;
  }

  // Checks ---------------------------------------------------------------------------------

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
  static void check_labels(const std::int32_t* y, std::size_t rows) {
    for (std::size_t r = 0; r < rows; ++r)
      if (y[r] < 0 || static_cast<std::size_t>(y[r]) >= Spec::outputs)
        throw error("SparseCategoricalCrossentropy: label " + std::to_string(y[r]) + " at row " +
                    std::to_string(r) + " is outside [0, " + std::to_string(Spec::outputs) + ")");
  }

  // Memory ---------------------------------------------------------------------------------

  float* params() const { return state_.template as<float>(sl_.params); }
  T* working_copy() const {
    if constexpr (narrow)
      return state_.template as<T>(sl_.working);
    else
      return state_.template as<float>(sl_.params);
  }
  float* optimizer_state() const { return state_.template as<float>(sl_.state); }
  DeviceControl* control() const { return state_.template as<DeviceControl>(sl_.control); }
  float* partial_floats() const { return state_.template as<float>(sl_.partial_floats); }
  double* partial_doubles() const { return state_.template as<double>(sl_.partial_doubles); }
  T* bias16() const { return state_.template as<T>(sl_.bias16); }
  void* workspace() const { return state_.data() + sl_.workspace; }
  float* grads() const { return arena<float>(plan::BufferRole::parameter_grads); }

  template <class U>
  U* arena(plan::BufferRole role, int layer = -1) const {
    return reinterpret_cast<U*>(arena_.data() + plan_.find(role, layer).offset);
  }

  // The parameter store: master weights, their 16-bit copy, optimizer state, control values,
  // scratch and workspace in one allocation. Reallocated only when the optimizer's slot count
  // changes (compile); parameters, working copy and control values carry over, the optimizer
  // state starts at zero.
  void allocate_state(std::size_t slots) {
    const StateLayout l = state_layout(slots);
    DeviceBuffer fresh(l.total, "Executor: parameters, optimizer state and workspace");
    cudaStream_t s = stream_.get();
    check(cudaMemsetAsync(fresh.data(), 0, l.total, s), "cudaMemsetAsync", "allocate_state");
    if (state_.size() != 0) {
      const auto copy = [&](std::size_t to, std::size_t from, std::size_t bytes) {
        check(cudaMemcpyAsync(fresh.data() + to, state_.data() + from, bytes,
                              cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync", "allocate_state");
      };
      copy(l.params, sl_.params, P * sizeof(float));
      if constexpr (narrow) copy(l.working, sl_.working, P * sizeof(T));
      copy(l.control, sl_.control, sizeof(DeviceControl));
    }
    stream_.synchronize("allocate_state");
    clear_graphs();
    state_ = std::move(fresh);
    sl_ = l;
    slots_ = slots;
  }

  void ensure_staging(std::size_t rows) {
    if (rows <= staging_rows_) return;
    stream_.synchronize("ensure_staging");
    clear_graphs();  // captured steps read the old slots
    for (Slot& s : staging_) {
      s.memory = PinnedBuffer(Slot::labels_offset(rows) + rows * sizeof(std::int32_t),
                              "Executor: pinned input staging");
      s.rows = rows;
    }
    staging_rows_ = rows;
  }

  Slot& stage(const float* x, const std::int32_t* y, std::size_t rows) {
    ensure_staging(rows);
    Slot& s = staging_[next_slot_];
    next_slot_ ^= 1;
    s.done.synchronize();  // the step that last read this slot is done with it
    std::memcpy(s.x(), x, rows * Spec::inputs * sizeof(float));
    if (y) std::memcpy(s.y(), y, rows * sizeof(std::int32_t));
    return s;
  }

  void upload(void* device, const void* host, std::size_t bytes, const char* where) const {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_.get()),
          "cudaMemcpyAsync", where);
  }
  void download_unpacked(const float* device, float* user, const char* where) const {
    std::vector<float> padded(P);
    check(cudaMemcpyAsync(padded.data(), device, P * sizeof(float), cudaMemcpyDeviceToHost,
                          stream_.get()),
          "cudaMemcpyAsync", where);
    stream_.synchronize(where);
    Layout::unpack(padded.data(), user);
  }
  DeviceControl read_control() const {
    check(cudaMemcpyAsync(mirror_.data(), control(), sizeof(DeviceControl), cudaMemcpyDeviceToHost,
                          stream_.get()),
          "cudaMemcpyAsync", "read_control");
    stream_.synchronize("read_control");
    DeviceControl c;
    std::memcpy(&c, mirror_.data(), sizeof(c));
    return c;
  }
  void upload_settings(const TrainSettings& s) {
    std::memcpy(mirror_.data(), &s, sizeof(s));
    upload(&control()->settings, mirror_.data(), sizeof(s), "upload_settings");
    stream_.synchronize("upload_settings");
  }

  void clear_graphs() { graphs_.clear(); }

  // cuBLASLt products ------------------------------------------------------------------------

  // Bytes from the start of the state allocation to layer i's kernel in the working copy
  // (what forward and dX read), or its bias.
  std::size_t kernel_bytes(std::size_t i) const { return Layout::kernel_offset(i) * sizeof(T); }

  MatmulShape forward_shape(std::size_t i, std::size_t rows, Pass pass) const {
    const bool last = i + 1 == depth;
    const ActivationKind act = Spec::activations[i];
    MatmulShape s;
    s.where = Spec::layer_name(i) + (pass == Pass::recompute   ? " recompute"
                                     : pass == Pass::inference ? " forward (inference)"
                                                               : " forward");
    s.m = Layout::dims[i + 1];
    s.n = rows;
    s.k = Layout::dims[i];
    s.lda = static_cast<std::int64_t>(Layout::dims[i + 1]);
    s.ldb = static_cast<std::int64_t>(Layout::dims[i]);
    s.ldd = static_cast<std::int64_t>(Layout::dims[i + 1]);
    s.a_type = s.b_type = data_type<T>();
    s.d_type = last ? CUDA_R_32F : data_type<T>();
    s.align_a = detail::alignment_of(kernel_bytes(i));
    // The bias has D's type: float32 master weights for the logits, else the working copy.
    s.align_bias =
        detail::alignment_of(Layout::bias_offset(i) * (last ? sizeof(float) : sizeof(T)));
    const bool train = pass != Pass::inference;
    if (act == ActivationKind::relu) {
      const bool mask = train && !last && (pass == Pass::recompute || !chain.recompute[i]);
      s.epilogue = mask ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
      s.aux_ld = static_cast<std::int64_t>(plan::relu_mask_ld(Layout::dims[i + 1]));
    } else if (act == ActivationKind::gelu) {
      const bool keep = train && !last;
      s.epilogue = keep ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS;
      s.aux_ld = static_cast<std::int64_t>(plan::gelu_aux_ld(Layout::dims[i + 1]));
    } else {
      s.epilogue = CUBLASLT_EPILOGUE_BIAS;
    }
    return s;
  }

  MatmulShape weight_grad_shape(std::size_t i, std::size_t rows) const {
    MatmulShape s;
    s.where = Spec::layer_name(i) + " dW";
    s.trans_b = CUBLAS_OP_T;
    s.m = Layout::dims[i + 1];
    s.n = Layout::dims[i];
    s.k = rows;
    s.lda = static_cast<std::int64_t>(Layout::dims[i + 1]);
    s.ldb = static_cast<std::int64_t>(Layout::dims[i]);
    s.ldd = static_cast<std::int64_t>(Layout::dims[i + 1]);
    s.a_type = s.b_type = data_type<T>();
    s.d_type = CUDA_R_32F;
    s.align_d = detail::alignment_of(Layout::kernel_offset(i) * sizeof(float));
    return s;
  }

  MatmulShape input_grad_shape(std::size_t i, std::size_t rows) const {
    const ActivationKind prev = Spec::activations[i - 1];
    MatmulShape s;
    s.where = Spec::layer_name(i) + " dX";
    s.trans_a = CUBLAS_OP_T;
    s.m = Layout::dims[i];
    s.n = rows;
    s.k = Layout::dims[i + 1];
    s.lda = static_cast<std::int64_t>(Layout::dims[i + 1]);
    s.ldb = static_cast<std::int64_t>(Layout::dims[i + 1]);
    s.ldd = static_cast<std::int64_t>(Layout::dims[i]);
    s.a_type = s.b_type = s.d_type = data_type<T>();
    s.align_a = detail::alignment_of(kernel_bytes(i));
    if (prev == ActivationKind::relu) {
      s.epilogue = CUBLASLT_EPILOGUE_DRELU_BGRAD;
      s.aux_ld = static_cast<std::int64_t>(plan::relu_mask_ld(Layout::dims[i]));
    } else if (prev == ActivationKind::gelu) {
      s.epilogue = CUBLASLT_EPILOGUE_DGELU_BGRAD;
      s.aux_ld = static_cast<std::int64_t>(plan::gelu_aux_ld(Layout::dims[i]));
    }
    // Where the bias gradient goes: float32 parameter gradients, or (16-bit policies, until
    // training_program finds float32 supported) the compute-type scratch.
    s.align_bias = narrow ? detail::alignment_of(bias16_offsets[i - 1] * sizeof(T))
                          : detail::alignment_of(Layout::bias_offset(i - 1) * sizeof(float));
    return s;
  }

  // Float32 D of fallback products whose output is 16-bit: one buffer for every layer (the
  // products run one after another on one stream), allocated only when a layer falls back.
  void ensure_fallback_scratch(std::size_t bytes) {
    if (bytes <= fallback_scratch_.size()) return;
    stream_.synchronize("ensure_fallback_scratch");
    clear_graphs();  // captured steps read the old buffer
    fallback_scratch_ = DeviceBuffer();
    fallback_scratch_ = DeviceBuffer(bytes, "Executor: float32 products of the epilogue fallback");
  }
  // Where a fallback product writes: `out` itself when it holds float32, else the scratch.
  void* fallback_target(void* out, bool float_out) const {
    return float_out ? out : static_cast<void*>(fallback_scratch_.data());
  }

  // fallback_bits_ per layer: which products ran plain, and 16-bit bias gradients.
  static constexpr unsigned fell_back_forward = 1, fell_back_recompute = 2,
                            fell_back_input_grad = 4, fell_back_inference = 8, bias_grad_16bit = 16;

  // The product for `shape` with its epilogue, or, when cuBLASLt has no algorithm with it
  // (or the fallback is forced), the plain product: `fallback` says which. The plain product
  // writes float32 in D's layout (see fallback_target), so that the fallback's kernels round
  // each value once, after the epilogue's math, as the fused epilogue does.
  std::optional<Matmul> product(const MatmulShape& shape, bool& fallback) {
    fallback = false;
    const bool fused = shape.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
    if (!fused) return Matmul::require(lt_.get(), shape);
    if (!force_fallback_)
      if (std::optional<Matmul> mm = Matmul::find(lt_.get(), shape)) return mm;
    MatmulShape plain = shape;
    plain.where += " (epilogue fallback)";
    plain.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    plain.bias_type = -1;
    if (plain.d_type != CUDA_R_32F) {
      plain.d_type = CUDA_R_32F;
      plain.align_d = 256;  // the scratch
      ensure_fallback_scratch(shape.m * shape.n * sizeof(float));
    }
    fallback = true;
    return Matmul::require(lt_.get(), plain);
  }

  TrainingProgram& training_program(std::size_t rows) {
    for (auto& p : training_programs_)
      if (p->rows == rows) return *p;
    auto p = std::make_unique<TrainingProgram>();
    p->rows = rows;
    cublasLtHandle_t lt = lt_.get();
    if constexpr (narrow) {
      p->widen.source = nullptr;  // bound at enqueue: the state allocation may move
      p->widen.count = 0;
    }
    for (std::size_t i = 0; i < depth; ++i) {
      LayerMatmuls& m = p->layers[i];
      m.forward = product(forward_shape(i, rows, Pass::train_forward), m.forward_fallback);
      if (m.forward_fallback) fallback_bits_[i] |= fell_back_forward;
      if (chain.recomputes_product(i)) {
        m.recompute = product(forward_shape(i, rows, Pass::recompute), m.recompute_fallback);
        if (m.recompute_fallback) fallback_bits_[i] |= fell_back_recompute;
      }
      m.weight_grad = Matmul::require(lt, weight_grad_shape(i, rows));
      if (i == 0) continue;
      const MatmulShape s = input_grad_shape(i, rows);
      if (narrow && epilogue_uses_bias(s.epilogue) && !force_fallback_) {
        // Ask for the bias gradient in float32 first: no 16-bit rounding, no widening pass.
        MatmulShape wide = s;
        wide.bias_type = CUDA_R_32F;
        wide.align_bias = detail::alignment_of(Layout::bias_offset(i - 1) * sizeof(float));
        m.input_grad = Matmul::find(lt, wide);
        m.bias_grad_float = m.input_grad.has_value();
      }
      if (!m.input_grad) {
        m.input_grad = product(s, m.input_grad_fallback);
        // activation_backward writes the bias gradient in float32 itself.
        if (m.input_grad_fallback) {
          m.bias_grad_float = true;
          fallback_bits_[i] |= fell_back_input_grad;
        }
      }
      if (!m.bias_grad_float) {
        fallback_bits_[i] |= bias_grad_16bit;
        auto& t = p->widen;
        t.from[t.count] = static_cast<std::uint32_t>(bias16_offsets[i - 1]);
        t.to[t.count] = static_cast<std::uint32_t>(Layout::bias_offset(i - 1));
        t.length[t.count] = static_cast<std::uint32_t>(Layout::dims[i]);
        ++t.count;
      }
    }
    training_programs_.push_back(std::move(p));
    return *training_programs_.back();
  }

  InferenceProgram& inference_program(std::size_t rows) {
    for (auto& p : inference_programs_)
      if (p->rows == rows) return *p;
    auto p = std::make_unique<InferenceProgram>();
    p->rows = rows;
    for (std::size_t i = 0; i < depth; ++i) {
      bool fallback = false;
      p->forward[i] = product(forward_shape(i, rows, Pass::inference), fallback);
      p->fallback[i] = fallback;
      if (fallback) fallback_bits_[i] |= fell_back_inference;
    }
    inference_programs_.push_back(std::move(p));
    return *inference_programs_.back();
  }

  // Kernels ----------------------------------------------------------------------------------

  static bool needs_activation_kernel(ActivationKind act) {
    return act == ActivationKind::sigmoid || act == ActivationKind::tanh;
  }

  template <class E>
  void launch_activation(ActivationKind act, const E* src, E* dst, std::size_t rows,
                         std::size_t layer, const char* where) {
    const std::size_t ld = Layout::dims[layer + 1];
    kernels::activation_forward<E>
        <<<detail::grid_for(rows * ld), kernels::block_threads, 0, stream_.get()>>>(
            act, src, dst, static_cast<int>(rows), static_cast<int>(Spec::dims[layer + 1]),
            static_cast<int>(ld));
    check_launch("activation_forward", where);
  }

  // The forward epilogue after a plain product (out: T, or float32 logits; bias likewise).
  template <class Out, class Bias>
  void launch_forward_epilogue(ActivationKind act, const float* product, Out* out, const Bias* bias,
                               const void* aux, std::size_t rows, std::size_t layer,
                               const char* where) {
    const std::size_t ld = Layout::dims[layer + 1];
    epilogue::ForwardArgs<Out, Bias, T> a;
    a.kind = act;
    a.product = product;
    a.out = out;
    a.bias = bias;
    // aux is what the fused epilogue would have written: the GELU input or the ReLU mask.
    if (act == ActivationKind::gelu) a.pre = static_cast<T*>(const_cast<void*>(aux));
    if (act == ActivationKind::relu) a.mask = static_cast<std::uint8_t*>(const_cast<void*>(aux));
    a.pre_ld = plan::gelu_aux_ld(ld);
    a.mask_ld = plan::relu_mask_ld(ld);
    a.rows = rows;
    a.width = Spec::dims[layer + 1];
    a.ld = ld;
    kernels::epilogue_forward<Out, Bias, T><<<detail::grid_for(epilogue::forward_items(a)),
                                              kernels::block_threads, 0, stream_.get()>>>(a);
    check_launch("epilogue_forward", where);
  }
  // The same for a layer whose output is float32 logits (last) or the compute type.
  void launch_forward_epilogue(std::size_t layer, const void* product, void* out, const void* bias,
                               const void* aux, std::size_t rows, const char* where) {
    const ActivationKind act = Spec::activations[layer];
    const float* p = static_cast<const float*>(product);
    if (layer + 1 == depth)
      launch_forward_epilogue(act, p, static_cast<float*>(out), static_cast<const float*>(bias),
                              aux, rows, layer, where);
    else
      launch_forward_epilogue(act, p, static_cast<T*>(out), static_cast<const T*>(bias), aux, rows,
                              layer, where);
  }

  template <class G>
  void launch_loss(kernels::LossMode mode, float* logits, G* grad, const std::int32_t* labels,
                   std::size_t rows, float* bias_grad, float* step_scalars, const char* where) {
    kernels::LossArgs<G> a;
    a.mode = mode;
    a.logits = logits;
    a.grad = grad;
    a.labels = labels;
    a.rows = static_cast<int>(rows);
    a.k = static_cast<int>(Spec::outputs);
    a.ld = static_cast<int>(Layout::dims[depth]);
    a.bias_grad = bias_grad;
    a.partial_bias = partial_floats();
    a.partial_sums = partial_doubles();
    a.control = control();
    a.step_scalars = step_scalars;
    const std::size_t warps = kernels::block_threads / 32;
    const unsigned grid = static_cast<unsigned>(
        std::clamp<std::size_t>((rows + warps - 1) / warps, 1, kernels::max_reduce_blocks));
    const std::size_t shared = kernels::loss_shared_bytes(mode, a.ld);
    kernels::softmax_cross_entropy<G><<<grid, kernels::block_threads, shared, stream_.get()>>>(a);
    check_launch("softmax_cross_entropy", where);
  }

  void launch_load(const float* x, const std::int32_t* y, std::size_t rows, T* input,
                   std::int32_t* labels, const char* where) {
    kernels::load_batch<T>
        <<<detail::grid_for(rows * Layout::dims[0]), kernels::block_threads, 0, stream_.get()>>>(
            x, y, static_cast<int>(rows), static_cast<int>(Spec::inputs),
            static_cast<int>(Layout::dims[0]), input, labels);
    check_launch("load_batch", where);
  }

  // A training step -------------------------------------------------------------------------

  template <class Opt, class LossScale>
  void run_step(std::size_t rows, const float* x, const std::int32_t* y, const Opt& opt,
                std::int64_t& iterations, LossScale& scale) {
    static_assert(std::is_same_v<Opt, SGD> || std::is_same_v<Opt, Adam>,
                  "cuda Executor::train_step: the optimizer must be mo::SGD or mo::Adam");
    // As on the CPU: the optimizer uses the first opt.slots() slots of what prepare()
    // allocated (Model::compile allocates exactly that many) and leaves any others alone.
    if (opt.slots() > slots_)
      throw error("train_step: the optimizer needs " + std::to_string(opt.slots()) +
                  " slots of state per parameter, prepare() allocated " + std::to_string(slots_));
    sync_settings(opt, iterations, scale);
    graph_for<Opt>(rows, x, y, false, opt.slots()).launch(stream_.get(), "train_step");
    // What the caller sees until synchronize(): the update applied.
    ++iterations;
    (void)scale.update(true);
    expected_ = detail::counters_of(iterations, scale);
    samples_ += rows;
  }

  // Uploads the optimizer's options, and the iteration count and loss scale when the caller
  // changed them, before a step. Rare (the first step, a new compile, set_iterations), so it
  // may wait for the device: it reads the device's values first, which are the truth.
  template <class Opt, class LossScale>
  void sync_settings(const Opt& opt, std::int64_t& iterations, LossScale& scale) {
    check_optimizer(opt);
    const detail::OptimizerSettings os = detail::settings_of(opt);
    const detail::Counters caller = detail::counters_of(iterations, scale);
    const bool caller_changed = !uploaded_ || caller != expected_;
    if (!caller_changed && os == uploaded_optimizer_ && slots_ == uploaded_slots_) return;
    TrainSettings s = read_control().settings;
    if (caller_changed) {
      s.iterations = iterations;
      s.scale = scale.value();
      if constexpr (detail::is_dynamic_v<LossScale>) {
        s.good_steps = scale.good_steps;
        s.growth_interval = scale.growth_interval;
        s.dynamic_scale = 1;
      } else {
        s.good_steps = 0;
        s.growth_interval = 0;
        s.dynamic_scale = 0;
      }
    } else {
      iterations = s.iterations;
      if constexpr (detail::is_dynamic_v<LossScale>) {
        scale.scale = s.scale;
        scale.good_steps = s.good_steps;
      }
    }
    s.optimizer = os.kind;
    s.learning_rate = os.learning_rate;
    s.beta_1 = os.beta_1;
    s.beta_2 = os.beta_2;
    s.epsilon = os.epsilon;
    s.momentum = os.momentum;
    s.nesterov = os.nesterov ? 1 : 0;
    s.slots = static_cast<std::int32_t>(slots_);
    upload_settings(s);
    uploaded_ = true;
    uploaded_optimizer_ = os;
    uploaded_slots_ = slots_;
    expected_ = detail::counters_of(iterations, scale);
  }

  template <class Opt>
  GraphExec& graph_for(std::size_t rows, const float* x, const std::int32_t* y, bool matmuls_only,
                       std::size_t opt_slots) {
    const OptimizerKind kind = std::is_same_v<Opt, Adam> ? OptimizerKind::adam : OptimizerKind::sgd;
    for (CachedGraph& g : graphs_)
      if (g.rows == rows && g.x == x && g.y == y && g.kind == kind &&
          g.matmuls_only == matmuls_only && g.opt_slots == opt_slots)
        return g.exec;
    // A handful of sources (two staging slots, a resident data set) and batch sizes (the
    // full batch, the epoch's last): a few graphs. Drop the oldest beyond that; an executable
    // graph still running when destroyed is released when it completes.
    if (graphs_.size() >= 16) graphs_.erase(graphs_.begin());
    TrainingProgram& p = training_program(rows);
    CachedGraph g;
    g.rows = rows;
    g.x = x;
    g.y = y;
    g.kind = kind;
    g.matmuls_only = matmuls_only;
    g.opt_slots = opt_slots;
    g.exec = GraphExec::capture(
        stream_.get(), [&] { enqueue_training_step<Opt>(p, x, y, matmuls_only, opt_slots); },
        "capturing the training step");
    graphs_.push_back(std::move(g));
    return graphs_.back().exec;
  }

  // The output of layer j as backward reads it: kept, or recomputed.
  T* kept_output(std::size_t j) const {
    return chain.recompute[j] ? arena<T>(plan::BufferRole::recomputed_activation, int(j))
                              : arena<T>(plan::BufferRole::activation, int(j));
  }

  // Queues one training step (captured into a graph by graph_for).
  template <class Opt>
  void enqueue_training_step(TrainingProgram& p, const float* x, const std::int32_t* y,
                             bool matmuls_only, std::size_t opt_slots) {
    using plan::BufferRole;
    const std::size_t rows = p.rows;
    cudaStream_t stream = stream_.get();
    cublasLtHandle_t lt = lt_.get();
    constexpr int last = static_cast<int>(depth) - 1;
    T* input = arena<T>(BufferRole::input);
    float* g = grads();
    // dL/dz of layer i as its dW and dX read it.
    const auto dz = [&](int i) -> T* {
      if (i == last)
        return narrow ? arena<T>(BufferRole::logits_grad, last)
                      : arena<T>(BufferRole::logits, last);
      return arena<T>(BufferRole::activation_grad, i);
    };
    const auto bias_of = [&](std::size_t i) -> const void* {
      if constexpr (depth == 1) {
        // The only layer is the last. (Said at compile time: GCC cannot see that i is 0 and
        // warns that the working copy's branch indexes past dims.)
        (void)i;
        return params() + Layout::bias_offset(0);
      } else {
        if (static_cast<int>(i) == last) return params() + Layout::bias_offset(i);
        return working_copy() + Layout::bias_offset(i);
      }
    };

    if (!matmuls_only)
      launch_load(x, y, rows, input, arena<std::int32_t>(BufferRole::labels), "train_step");

    constexpr auto schedule = plan::training_schedule_of(chain);
    for (int k = 0; k < schedule.count; ++k) {
      const plan::Step step = schedule[k];
      const int i = step.layer;
      const std::size_t ui = static_cast<std::size_t>(i < 0 ? 0 : i);
      switch (step.kind) {
        case plan::StepKind::forward: {
          const ActivationKind act = Spec::activations[ui];
          const T* in = i == 0 ? input : arena<T>(BufferRole::activation, i - 1);
          void* out = i == last ? static_cast<void*>(arena<float>(BufferRole::logits, i))
                                : static_cast<void*>(arena<T>(BufferRole::activation, i));
          const void* aux = nullptr;
          if (i != last && act == ActivationKind::relu && !chain.recompute[ui])
            aux = arena<std::uint8_t>(BufferRole::relu_mask, i);
          if (i != last && act == ActivationKind::gelu)
            aux = arena<T>(BufferRole::pre_activation, i);
          const bool fallback = p.layers[ui].forward_fallback;
          void* d = fallback ? fallback_target(out, i == last || !narrow) : out;
          p.layers[ui].forward->run(lt, stream, working_copy() + Layout::kernel_offset(ui), in, d,
                                    bias_of(ui), aux, workspace());
          // The fallback's kernels stay out of matmuls_only, like every kernel of memopt's.
          if (!matmuls_only && fallback) {
            launch_forward_epilogue(ui, d, out, bias_of(ui), aux, rows, "forward");
          } else if (!matmuls_only && needs_activation_kernel(act)) {
            if (i == last)
              launch_activation<float>(act, static_cast<float*>(out), static_cast<float*>(out),
                                       rows, ui, "forward");
            else
              launch_activation<T>(act, static_cast<T*>(out), static_cast<T*>(out), rows, ui,
                                   "forward");
          }
          break;
        }
        case plan::StepKind::loss: {
          if (matmuls_only) break;
          float* logits = arena<float>(BufferRole::logits, last);
          float* scalars = arena<float>(BufferRole::step_scalars);
          float* bias_grad = g + Layout::bias_offset(depth - 1);
          const std::int32_t* labels = arena<std::int32_t>(BufferRole::labels);
          if constexpr (narrow)
            launch_loss<T>(kernels::LossMode::train, logits,
                           arena<T>(BufferRole::logits_grad, last), labels, rows, bias_grad,
                           scalars, "loss");
          else
            launch_loss<float>(kernels::LossMode::train, logits, logits, labels, rows, bias_grad,
                               scalars, "loss");
          break;
        }
        case plan::StepKind::recompute: {
          const ActivationKind act = Spec::activations[ui];
          T* out = arena<T>(BufferRole::recomputed_activation, i);
          if (act == ActivationKind::gelu) {
            if (!matmuls_only)
              launch_activation<T>(act, arena<T>(BufferRole::pre_activation, i), out, rows, ui,
                                   "recompute");
            break;
          }
          const T* in = i == 0 ? input : kept_output(ui - 1);
          const void* aux =
              act == ActivationKind::relu ? arena<std::uint8_t>(BufferRole::relu_mask, i) : nullptr;
          const bool fallback = p.layers[ui].recompute_fallback;
          void* d = fallback ? fallback_target(out, !narrow) : out;
          p.layers[ui].recompute->run(lt, stream, working_copy() + Layout::kernel_offset(ui), in, d,
                                      bias_of(ui), aux, workspace());
          if (!matmuls_only && fallback)
            launch_forward_epilogue(ui, d, out, bias_of(ui), aux, rows, "recompute");
          else if (!matmuls_only && needs_activation_kernel(act))
            launch_activation<T>(act, out, out, rows, ui, "recompute");
          break;
        }
        case plan::StepKind::weight_grad: {
          const T* in = i == 0 ? input : kept_output(ui - 1);
          p.layers[ui].weight_grad->run(lt, stream, dz(i), in, g + Layout::kernel_offset(ui),
                                        nullptr, nullptr, workspace());
          break;
        }
        case plan::StepKind::input_grad: {
          const ActivationKind prev = Spec::activations[ui - 1];
          LayerMatmuls& m = p.layers[ui];
          T* out = arena<T>(BufferRole::activation_grad, i - 1);
          const void* aux = nullptr;
          if (prev == ActivationKind::relu) aux = arena<std::uint8_t>(BufferRole::relu_mask, i - 1);
          if (prev == ActivationKind::gelu) aux = arena<T>(BufferRole::pre_activation, i - 1);
          void* bias_grad = m.bias_grad_float
                                ? static_cast<void*>(g + Layout::bias_offset(ui - 1))
                                : static_cast<void*>(bias16() + bias16_offsets[ui - 1]);
          // The fallback's 16-bit dX goes to the float32 scratch first (see `product`).
          void* d = m.input_grad_fallback ? fallback_target(out, !narrow) : out;
          m.input_grad->run(lt, stream, working_copy() + Layout::kernel_offset(ui), dz(i), d,
                            bias_grad, aux, workspace());
          if (!matmuls_only && !epilogue_uses_bias(m.input_grad->shape().epilogue)) {
            // Sigmoid and Tanh read f' from the kept output; ReLU (fallback) from the mask,
            // GELU (fallback) from its input; Linear reads nothing.
            kernels::ActivationBackwardArgs<T> a;
            epilogue::BackwardArgs<T>& v = a.values;
            v.kind = prev;
            v.grad = out;
            if (d != out) v.product = static_cast<const float*>(d);
            if (prev == ActivationKind::sigmoid || prev == ActivationKind::tanh)
              v.out = kept_output(ui - 1);
            if (prev == ActivationKind::relu) v.mask = static_cast<const std::uint8_t*>(aux);
            if (prev == ActivationKind::gelu) v.pre = static_cast<const T*>(aux);
            v.mask_ld = plan::relu_mask_ld(Layout::dims[ui]);
            v.pre_ld = plan::gelu_aux_ld(Layout::dims[ui]);
            v.rows = rows;
            v.width = Spec::dims[ui];
            v.ld = Layout::dims[ui];
            a.bias_grad = g + Layout::bias_offset(ui - 1);
            a.partial = partial_floats();
            a.control = control();
            const unsigned grid =
                static_cast<unsigned>(std::clamp<std::size_t>(rows, 1, kernels::max_reduce_blocks));
            kernels::activation_backward<T><<<grid, kernels::block_threads, 0, stream>>>(a);
            check_launch("activation_backward", "dX");
          }
          break;
        }
        case plan::StepKind::optimizer: {
          if (matmuls_only) break;
          enqueue_update<Opt>(p, g, opt_slots);
          break;
        }
      }
    }
  }

  template <class Opt>
  void enqueue_update(TrainingProgram& p, float* g, std::size_t opt_slots) {
    cudaStream_t stream = stream_.get();
    if constexpr (narrow) {
      if (p.widen.count > 0) {
        kernels::WidenTable<T, depth> t = p.widen;
        t.source = bias16();
        t.target = g;
        std::uint32_t longest = 0;
        for (int s = 0; s < t.count; ++s) longest = std::max(longest, t.length[s]);
        const dim3 grid(detail::grid_for(longest), static_cast<unsigned>(t.count));
        kernels::widen<T, depth><<<grid, kernels::block_threads, 0, stream>>>(t);
        check_launch("widen", "optimizer");
      }
    }
    float* scalars = arena<float>(plan::BufferRole::step_scalars);
    kernels::check_gradients<float>
        <<<detail::grid_for(P / 4, 1024), kernels::block_threads, 0, stream>>>(g, P, control(),
                                                                               scalars);
    check_launch("check_gradients", "optimizer");
    kernels::UpdateArgs<T> a;
    a.weights = params();
    a.grads = g;
    a.state = opt_slots ? optimizer_state() : nullptr;
    a.working = narrow ? working_copy() : nullptr;
    a.n = P;
    a.control = control();
    kernels::apply_update<Opt, T>
        <<<detail::grid_for(P / 4), kernels::block_threads, 0, stream>>>(a);
    check_launch("apply_update", "optimizer");
  }

  // Inference ----------------------------------------------------------------------------------

  // Forward through the inference plan from a staged batch; returns the logits (rows x
  // padded outputs, float32) in device memory.
  float* infer(const float* x, std::size_t rows) {
    using plan::BufferRole;
    if (rows > inference_capacity_) {
      const inference_plan_type p = Layout::inference_plan(rows);
      stream_.synchronize("infer");
      inference_arena_ = DeviceBuffer();
      inference_arena_ =
          DeviceBuffer(p.arena_bytes, "predict: the inference arena for a batch of " +
                                          std::to_string(rows) + " rows");
      inference_plan_ = p;
      inference_capacity_ = rows;
    }
    InferenceProgram& prog = inference_program(rows);
    const auto at = [&](BufferRole role, int layer = -1) {
      return inference_arena_.data() + inference_plan_.find(role, layer).offset;
    };
    constexpr int last = static_cast<int>(depth) - 1;
    T* input = reinterpret_cast<T*>(at(BufferRole::input));
    launch_load(x, nullptr, rows, input, nullptr, "infer");
    for (int i = 0; i <= last; ++i) {
      const std::size_t ui = static_cast<std::size_t>(i);
      const T* in = i == 0 ? input : reinterpret_cast<const T*>(at(BufferRole::activation, i - 1));
      void* out = at(i == last ? BufferRole::logits : BufferRole::activation, i);
      const void* bias = i == last
                             ? static_cast<const void*>(params() + Layout::bias_offset(ui))
                             : static_cast<const void*>(working_copy() + Layout::bias_offset(ui));
      void* d = prog.fallback[ui] ? fallback_target(out, i == last || !narrow) : out;
      prog.forward[ui]->run(lt_.get(), stream_.get(), working_copy() + Layout::kernel_offset(ui),
                            in, d, bias, nullptr, workspace());
      const ActivationKind act = Spec::activations[ui];
      if (prog.fallback[ui]) {
        launch_forward_epilogue(ui, d, out, bias, nullptr, rows, "infer");
      } else if (needs_activation_kernel(act)) {
        if (i == last)
          launch_activation<float>(act, static_cast<float*>(out), static_cast<float*>(out), rows,
                                   ui, "infer");
        else
          launch_activation<T>(act, static_cast<T*>(out), static_cast<T*>(out), rows, ui, "infer");
      }
    }
    return reinterpret_cast<float*>(at(BufferRole::logits, last));
  }

  Stream stream_{};
  CublasLtHandle lt_{};
  PinnedBuffer mirror_;  // DeviceControl, for reads and uploads
  DeviceBuffer state_{};
  StateLayout sl_{};
  std::size_t slots_ = 0;
  DeviceBuffer arena_{};
  plan_type plan_{};
  std::size_t capacity_ = 0;
  DeviceBuffer inference_arena_{};
  inference_plan_type inference_plan_{};
  std::size_t inference_capacity_ = 0;
  std::array<Slot, 2> staging_;
  std::size_t staging_rows_ = 0;
  int next_slot_ = 0;
  std::vector<std::unique_ptr<TrainingProgram>> training_programs_;
  std::vector<std::unique_ptr<InferenceProgram>> inference_programs_;
  std::vector<CachedGraph> graphs_;
  std::size_t samples_ = 0;
  bool watching_ = false;
  PinnedBuffer watch_sums_{};  // watch_depth doubles
  std::array<WatchEntry, watch_depth> watch_ring_{};
  std::size_t watch_head_ = 0, watch_count_ = 0, watch_steps_ = 0;
  std::vector<WatchedLoss> watch_finished_{};
  bool uploaded_ = false;
  detail::OptimizerSettings uploaded_optimizer_{};
  std::size_t uploaded_slots_ = 0;
  detail::Counters expected_{};
  bool force_fallback_ = false;
  DeviceBuffer fallback_scratch_{};
  std::array<unsigned, depth> fallback_bits_{};  // per layer: fell_back_* | bias_grad_16bit
};

}  // namespace memopt::cuda_backend
