#pragma once
// train::fit_loop: Keras's `fit` epochs (callbacks, progress bar, logs, validation, the
// data-parallel handshakes), written once for every model. A model takes part through
// train::Trainee, the few things that depend on its type: checking and running one batch,
// its totals and metrics, its state.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/data/any_batches.hpp"
#include "memopt/data/pass.hpp"
#include "memopt/distributed/fit_sync.hpp"
#include "memopt/train/any_metric.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/progress_bar.hpp"
#include "memopt/train/fit_options.hpp"
#include "memopt/train/history.hpp"
#include "memopt/train/nonfinite_loss.hpp"

namespace memopt::train {

class Trainee;
History fit_loop(Trainee& model, const data::AnyBatches& batches, std::size_t steps,
                 const FitOptions& options, distributed::FitSync& sync);

/// A model as fit_loop drives it (Model is one). The hooks are private: only the loop calls
/// them, and callbacks see the model as its TrainingContext.
class Trainee : public TrainingContext {
 private:
  friend History fit_loop(Trainee&, const data::AnyBatches&, std::size_t, const FitOptions&,
                          distributed::FitSync&);

  /// What every rank must agree on before a data-parallel fit (types, policy, optimizer,
  /// buckets, metrics).
  virtual std::string fit_description() const = 0;
  /// Rank 0's weights, state, optimizer state, step count and loss scale, on every rank.
  virtual void share_chief_state(distributed::FitSync& sync) = 0;
  /// Where training stands: `epochs` completed, and `batches` of the next one trained.
  virtual void set_position(int epochs, int batches) = 0;
  /// The compiled metrics other than Accuracy, and whether Accuracy is one.
  virtual std::span<AnyMetric> fit_metrics() = 0;
  virtual bool reports_accuracy() const = 0;

  /// Raises memopt::error unless the batch fits the model's input and loss; its rows.
  virtual std::size_t checked_rows(const data::BatchRef& b) const = 0;
  virtual std::size_t checked_rows(const data::PixelBatchRef& b) const = 0;
  virtual std::size_t checked_rows(const data::TargetBatchRef& b) const = 0;
  /// One training step on a checked batch.
  virtual void train_step(const data::BatchRef& b, std::size_t rows) = 0;
  virtual void train_step(const data::PixelBatchRef& b, std::size_t rows) = 0;
  virtual void train_step(const data::TargetBatchRef& b, std::size_t rows) = 0;

  /// Clears the loss and accuracy sums (a fit stopped by an error may have left steps
  /// behind) and says whether steps should report their losses as they finish.
  virtual void begin_steps(bool watch_losses) = 0;
  /// The sums of the steps run since the last call, and the running ones (null where the
  /// backend cannot tell without waiting).
  virtual StepTotals take_totals() = 0;
  virtual const StepTotals* running_totals() const = 0;
  /// Feeds `watch` the losses of the steps finished since the last call; true when one is
  /// first found not finite.
  virtual bool watch_losses(NonfiniteLossWatch& watch) = 0;
  /// At an epoch's end: BatchNormalization's moving statistics averaged over the ranks, and
  /// the step count and loss scale that a device backend keeps.
  virtual void end_epoch(const distributed::FitSync& sync) = 0;
  /// Validation: the mean loss, accuracy and metrics over every rank's batches.
  virtual Evaluation validate(const data::AnyBatches& batches,
                              const distributed::FitSync& sync) = 0;
};

namespace detail {

// What fit says of a loss that is not finite: the epoch's (or the step's) value as found,
// and the step where it first appeared when that is known.
inline std::string nonfinite_loss_message(double loss, int epoch,
                                          const std::optional<NonfiniteStep>& first,
                                          std::optional<int> stopped_at = std::nullopt) {
  std::string where = fmt::format("at epoch {}", epoch + 1);
  std::string detail = "expected a finite value";
  if (first && stopped_at) {
    where += fmt::format(", step {}", first->step + 1);
    detail +=
        first->step == *stopped_at
            ? "; training stopped there (terminate_on_nan)"
            : fmt::format("; training stopped at step {} (terminate_on_nan)", *stopped_at + 1);
  } else if (first) {
    detail +=
        fmt::format("; it was first {}, at step {}", format_loss(first->loss), first->step + 1);
  }
  return fmt::format("fit: the loss is {} {} ({}); lower the learning rate or check the inputs",
                     format_loss(loss), where, detail);
}

inline BatchLogs running_logs(const StepTotals* t, bool has_accuracy) {
  BatchLogs logs;
  logs.has_accuracy = has_accuracy;
  if (t) {
    logs.loss = t->mean_loss();
    logs.accuracy = t->accuracy();
    logs.samples = t->samples;
  }
  return logs;
}

}  // namespace detail

/// fit's epochs on this rank over `batches` (`steps` per epoch, 0 when not known before the
/// first epoch ends). With `sync`, every rank runs it in step with the others; a rank that
/// throws alone must tell them (Model::fit does).
inline History fit_loop(Trainee& model, const data::AnyBatches& batches, std::size_t steps,
                        const FitOptions& options, distributed::FitSync& sync) {
  model.stop_training = false;
  if (sync) {
    // The bucket caps and the metrics too: ranks that cut the gradients differently, or keep
    // other metrics, would pair all-reduces of different lengths.
    sync.check_same_model(model.fit_description());
    for (const AnyMetric& m : model.fit_metrics())
      if (!m.summable())
        sync.fail_together(fmt::format(
            "fit: the metric '{}' has no state() to sum across ranks; data parallelism logs "
            "each metric over the global batch, so give it `std::span<double> state()` (see "
            "memopt::SummableMetric) or leave it out of compile()",
            m.name()));
  }
  for (Callback* cb : options.callbacks) cb->set_context(&model);
  // A callback that calls load() in on_train_begin moves the start (to a batch within an epoch
  // for a backup taken mid-epoch); a save() during the first epoch records the epoch it is in.
  model.set_position(options.initial_epoch, 0);
  for (Callback* cb : options.callbacks) cb->on_train_begin({});
  model.share_chief_state(sync);
  model.set_position(static_cast<int>(sync.chief_value(model.completed_epochs())),
                     static_cast<int>(sync.chief_value(model.epoch_batches())));
  const int first_epoch = model.completed_epochs();
  // Batches of the first epoch that a restored checkpoint had trained: read and skipped.
  const int resumed_batches = model.epoch_batches();
  const bool accuracy = model.reports_accuracy();
  History history;
  callbacks::ProgressBar bar({.verbose = model.is_chief() ? options.verbose : 0});
  bar.show_accuracy(accuracy);
  model.begin_steps(options.terminate_on_nan);
  NonfiniteLossWatch nonfinite;
  for (int epoch = first_epoch; epoch < options.epochs; ++epoch) {
    nonfinite.begin_epoch();
    for (AnyMetric& m : model.fit_metrics()) m.reset_state();
    for (Callback* cb : options.callbacks) cb->on_epoch_begin(epoch, {});
    bar.on_epoch_begin(epoch, options.epochs, steps);
    int batch_index = 0;
    const int skip = epoch == first_epoch ? resumed_batches : 0;
    // Epoch e is the pipeline's pass e (shuffle's order), in this process or a resumed one.
    const data::PassScope pass(static_cast<std::uint64_t>(epoch));
    batches.for_each([&](const auto& b) {
      if (batch_index < skip) {
        ++batch_index;
        return true;
      }
      const std::size_t rows = model.checked_rows(b);
      if (!sync.next_step(rows, model.stop_training)) return false;  // a rank ran out or stopped
      for (Callback* cb : options.callbacks) cb->on_train_batch_begin(batch_index);
      model.train_step(b, rows);
      model.set_position(epoch, batch_index + 1);
      if (model.watch_losses(nonfinite) && options.terminate_on_nan)
        throw error(detail::nonfinite_loss_message(nonfinite.first()->loss, epoch,
                                                   nonfinite.first(), batch_index));
      const bool draw = bar.due();
      if (!options.callbacks.empty() || draw) {
        const BatchLogs running = detail::running_logs(model.running_totals(), accuracy);
        for (Callback* cb : options.callbacks) cb->on_train_batch_end(batch_index, running);
        if (draw) bar.update(static_cast<std::size_t>(batch_index) + 1, running);
      }
      ++batch_index;
      return !model.stop_training;  // a callback stopped it mid-epoch (TerminateOnNaN), as Keras
    });
    sync.end_steps(model.stop_training);
    // Global loss, accuracy and metrics: over every rank's samples.
    const StepTotals t = sync.global(model.take_totals());
    for (AnyMetric& m : model.fit_metrics()) sync.sum(m.state());
    model.end_epoch(sync);
    if (steps == 0) steps = static_cast<std::size_t>(batch_index);
    if (batch_index < skip)
      sync.fail_together(fmt::format(
          "fit: the restored checkpoint had trained {} batches of epoch {}, but the training "
          "data yields {} batches; resume with the data the interrupted run used",
          skip, epoch + 1, batch_index));
    // A checkpoint taken after an epoch's last batch leaves nothing of it to train: the epoch
    // ends here (validation, callbacks) with training logs of no samples, NaN.
    if (t.samples == 0 && skip == 0)
      sync.fail_together("fit: the training data produced no batches");
    (void)model.watch_losses(nonfinite);  // on CUDA: the steps finished since the last look
    // Unless a callback stopped training for it (callbacks::TerminateOnNaN, as Keras's).
    if (!std::isfinite(t.mean_loss()) && !model.stop_training)
      sync.fail_together(detail::nonfinite_loss_message(t.mean_loss(), epoch, nonfinite.first()));
    const double nothing = std::numeric_limits<double>::quiet_NaN();
    Logs logs{{"loss", t.samples > 0 ? t.mean_loss() : nothing}};
    if (accuracy) logs["accuracy"] = t.samples > 0 ? t.accuracy() : nothing;
    for (const AnyMetric& m : model.fit_metrics())
      logs[std::string(m.name())] = t.samples > 0 ? m.result() : nothing;
    if (options.validation_data) {
      const Evaluation v = model.validate(options.validation_data, sync);
      logs["val_loss"] = v.loss;
      if (accuracy) logs["val_accuracy"] = v.accuracy;
      for (const auto& [name, value] : v.metrics) logs["val_" + name] = value;
    }
    history.append(epoch, logs);
    model.set_position(epoch + 1, 0);
    bar.on_epoch_end(static_cast<std::size_t>(batch_index), logs);
    for (Callback* cb : options.callbacks) cb->on_epoch_end(epoch, logs);
    model.stop_training = sync.any(model.stop_training);
    if (model.stop_training) break;
  }
  for (Callback* cb : options.callbacks) cb->on_train_end({});
  return history;
}

}  // namespace memopt::train
