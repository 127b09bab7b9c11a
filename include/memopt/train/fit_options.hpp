#pragma once
// FitOptions and Evaluation: what Keras's `fit` takes beside the data, and what `evaluate`
// returns.

#include <vector>

#include "memopt/data/any_batches.hpp"
#include "memopt/distributed/communicator_ref.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"

namespace memopt {

/// Keras's `fit` arguments.
struct FitOptions {
  int epochs = 1;
  /// The first epoch to train (0-based), unless a callback restores a checkpoint in
  /// on_train_begin (callbacks::BackupAndRestore): then fit starts after that checkpoint's
  /// last completed epoch, as Keras's model._initial_epoch.
  int initial_epoch = 0;
  data::AnyBatches validation_data{};
  std::vector<Callback*> callbacks{};
  /// 0 silent; 1 Keras's progress bar on a terminal, one line per epoch otherwise; 2 one
  /// line per epoch.
  int verbose = 1;
  /// Stop at the step whose loss is first NaN or inf (raising memopt::error naming it),
  /// as Keras's TerminateOnNaN does; otherwise the epoch runs on and the end of the epoch
  /// reports it. Costs no wait for the device on CUDA: its steps report when done.
  bool terminate_on_nan = false;
  /// Synchronous data parallelism (Keras's MirroredStrategy) over these ranks, e.g. `&comm`
  /// for a distributed::MpiCommunicator: rank 0's state is broadcast at the start, gradients
  /// are averaged every step, the logs are global, rank 0 alone prints and writes files. Give
  /// each rank its own part of the data (`| data::shard(comm.size(), comm.rank())`). See
  /// distributed/fit_sync.hpp for what each rank does; the CPU backend only, for now.
  distributed::CommunicatorRef communicator{};
};

/// `evaluate`'s result: the mean loss, the accuracy, and every other compiled metric by its
/// Keras name (`metrics.at("auc")`).
struct Evaluation {
  double loss = 0;
  double accuracy = 0;
  Logs metrics{};
};

}  // namespace memopt
