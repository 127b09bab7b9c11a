#pragma once
// distributed::FitSync: what Model::fit does across ranks for synchronous data parallelism
// (Keras's MirroredStrategy / MultiWorkerMirroredStrategy). Without a communicator every
// call leaves the values as they are, so fit calls it unconditionally.
//
// The protocol, in the order fit runs it on every rank:
//   1. check_same_model: rank 0's model-type hash against every rank's; a mismatch raises
//      memopt::error on every rank, naming the ranks that differ.
//   2. share_chief_state: rank 0's weights, moving statistics, optimizer state, step count
//      and loss scale, broadcast (after on_train_begin, so a restored backup is rank 0's).
//   3. each step, next_step: all ranks agree that every one has a batch and none stopped
//      (one all-reduce of three numbers). The epoch ends on all ranks when any rank runs out:
//      shards of unequal length train on the shortest's steps, and what is left of the longer
//      ones that epoch is dropped (as tf.data's MultiWorkerMirroredStrategy requires equal
//      steps). A rank whose loop ends first sends its "no batch" in end_steps.
//   4. during backward, BucketReducer (bucket_reducer.hpp), the executor's GradientReducer:
//      each rank's gradients weighted by its rows (gradient_weight), summed bucket by bucket
//      while backward runs on: the mean over the global batch, whatever the last batches'
//      sizes. A non-finite gradient on any rank makes the sum non-finite on every rank, so
//      all skip that step and the dynamic loss scale stays the same everywhere.
//   5. at the epoch's end: the loss/accuracy totals and each metric's state summed (global
//      logs, validation's too), the moving statistics averaged (their update is linear, so
//      this equals averaging every step, as Keras's MEAN aggregation of BatchNormalization's
//      variables), stop_training or-ed.
//   6. an exception leaving fit on one rank: notify_failure tells the others, whose current
//      or next collective raises memopt::error naming that rank and its error.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/distributed/communicator_ref.hpp"

namespace memopt::distributed {

class FitSync {
 public:
  FitSync() = default;
  explicit FitSync(CommunicatorRef comm) : comm_(comm) {}

  explicit operator bool() const { return static_cast<bool>(comm_); }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }

  /// Raises memopt::error on every rank unless every rank describes its model as rank 0
  /// does (`description`: the layers, shapes, policy, optimizer, bucket caps and metrics).
  void check_same_model(std::string_view description) {
    if (!comm_) return;
    const std::uint64_t own = fnv1a(description);
    std::array<float, 4> chief = pieces(own);
    comm_.broadcast(chief, 0);
    std::vector<double> differs(static_cast<std::size_t>(size()), 0.0);
    differs[static_cast<std::size_t>(rank())] = chief == pieces(own) ? 0.0 : 1.0;
    comm_.all_reduce_sum(std::span<double>(differs));
    std::string ranks;
    for (std::size_t r = 0; r < differs.size(); ++r)
      if (differs[r] != 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (ranks.empty()) return;
    fail_together("fit: the model differs between ranks: rank(s) " + ranks +
                  " built another model type than rank 0 (data parallelism needs the same layers, "
                  "policy, optimizer, bucket caps and metrics on every rank); this rank, " +
                  std::to_string(rank()) + ", has " + std::string(description));
  }

  /// Every rank gets rank 0's weights (get_weights: the moving statistics with them),
  /// optimizer state, step count and loss scale (`M`: a Model).
  template <class M>
  void share_chief_state(M& model) const {
    if (!comm_) return;
    std::vector<float> values = model.get_weights();
    comm_.broadcast(values, 0);
    model.set_weights(values);
    values = model.get_optimizer_state();
    if (!values.empty()) {
      comm_.broadcast(values, 0);
      model.set_optimizer_state(values);
    }
    model.set_iterations(chief_value(model.iterations()));
    auto scale = model.loss_scale();
    if constexpr (requires { scale.scale, scale.good_steps; }) {
      std::array<float, 1> value{scale.scale};
      comm_.broadcast(value, 0);
      scale.scale = value[0];
      scale.good_steps = static_cast<decltype(scale.good_steps)>(chief_value(scale.good_steps));
      model.set_loss_scale(scale);
    }
  }

  /// Rank 0's value of an integer (up to 2^63), exactly: sent as four 16-bit pieces, which
  /// floats hold exactly.
  std::int64_t chief_value(std::int64_t value) const {
    if (!comm_) return value;
    std::array<float, 4> p = pieces(static_cast<std::uint64_t>(value));
    comm_.broadcast(p, 0);
    std::uint64_t v = 0;
    for (float f : p) v = (v << 16) | static_cast<std::uint64_t>(f);
    return static_cast<std::int64_t>(v);
  }

  /// Whether every rank has a batch of its own (`rows`) and none has set `stop`; if not,
  /// the epoch's steps end on every rank and `stop` becomes true when any rank set it.
  bool next_step(std::size_t rows, bool& stop) {
    if (!comm_) return true;
    std::array<double, 3> m{1.0, static_cast<double>(rows), stop ? 1.0 : 0.0};
    comm_.all_reduce_sum(std::span<double>(m));
    if (m[0] < size() || m[2] > 0) {
      stop = stop || m[2] > 0;
      steps_ended_ = true;
      return false;
    }
    global_rows_ = m[1];
    return true;
  }
  /// After the epoch's loop: a rank that left it on its own (no batch left, or a callback
  /// stopped it) tells the others, which are waiting in next_step.
  void end_steps(bool& stop) {
    if (comm_ && !steps_ended_) {
      std::array<double, 3> m{0.0, 0.0, stop ? 1.0 : 0.0};
      comm_.all_reduce_sum(std::span<double>(m));
      stop = stop || m[2] > 0;
    }
    steps_ended_ = false;
  }

  /// The transport, for the gradients' all-reduces (bucket_reducer.hpp).
  const CommunicatorRef& communicator() const { return comm_; }
  /// Whether this step's gradients are to be averaged across ranks (a data-parallel step).
  bool averages_gradients() const { return comm_ && global_rows_ > 0; }
  /// This rank's share of the step's mean: its `rows` over every rank's. Its gradients (the
  /// mean over its rows) times this, summed over ranks, are the mean over the global batch.
  float gradient_weight(std::size_t rows) const {
    return static_cast<float>(static_cast<double>(rows) / global_rows_);
  }

  /// The totals summed over ranks: the epoch's loss and accuracy over every rank's samples.
  StepTotals global(const StepTotals& t) const {
    if (!comm_) return t;
    std::array<double, 4> v{t.loss_sum, t.correct, static_cast<double>(t.samples),
                            static_cast<double>(t.skipped_steps)};
    comm_.all_reduce_sum(std::span<double>(v));
    return {v[0], v[1], static_cast<std::size_t>(v[2]), static_cast<std::size_t>(v[3])};
  }

  /// The sum over ranks, in place (a SummableMetric's state: the metric over every rank's
  /// batches).
  void sum(std::span<double> values) const {
    if (comm_ && !values.empty()) comm_.all_reduce_sum(values);
  }

  /// The mean over ranks, in place.
  void average(std::span<float> values) const {
    if (!comm_) return;
    comm_.all_reduce_sum(values);
    const float inverse = 1.0f / static_cast<float>(size());
    for (float& v : values) v *= inverse;
  }

  /// Raises memopt::error(`message`) for a failure every rank raises at this point (it was
  /// decided from values all ranks share), so that none waits for another.
  [[noreturn]] void fail_together(std::string message) {
    failed_together_ = true;
    throw error(std::move(message));
  }

  /// Tells the other ranks that this one leaves fit with an error (`cause`), so that they
  /// raise one naming it rather than wait for this rank; nothing when every rank raised it
  /// together (fail_together). Never throws: it runs while the error is on its way out.
  void notify_failure(std::string_view cause) const noexcept {
    if (!comm_ || failed_together_) return;
    try {
      comm_.notify_failure(cause);
    } catch (...) {  // the transport failed too: the others learn it from mpirun
    }
  }

  /// Whether `flag` is set on any rank.
  bool any(bool flag) const {
    if (!comm_) return flag;
    std::array<double, 1> v{flag ? 1.0 : 0.0};
    comm_.all_reduce_sum(std::span<double>(v));
    return v[0] > 0;
  }

 private:
  // 64-bit FNV-1a: the same on every rank and every build, unlike std::hash.
  static std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 14695981039346656037ull;
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    return h;
  }
  static std::array<float, 4> pieces(std::uint64_t v) {
    std::array<float, 4> p{};
    for (int k = 0; k < 4; ++k)
      p[static_cast<std::size_t>(k)] = static_cast<float>((v >> (48 - 16 * k)) & 0xffffu);
    return p;
  }

  CommunicatorRef comm_{};
  double global_rows_ = 0;        // the rows of the current step over every rank
  bool steps_ended_ = false;      // this epoch's steps ended by agreement in next_step
  bool failed_together_ = false;  // fit is failing on every rank alike
};

}  // namespace memopt::distributed
