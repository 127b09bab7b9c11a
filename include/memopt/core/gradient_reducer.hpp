#pragma once
// GradientReducer: what a backend tells data parallelism while it runs a training step.

#include <cstddef>
#include <cstdint>
#include <span>

namespace memopt {

/// Told by an executor, during a training step, when each node's parameter gradients are
/// final and when backward is over; it makes them the mean over every rank's rows. The
/// executor knows nothing of ranks or transports: distributed::BucketReducer is the one
/// implementation, which all-reduces the plan's gradient buckets as backward fills them.
///
/// `grads` is always the whole flat gradient buffer (this rank's mean over its `rows`, times
/// the loss scale), laid out like the parameters.
class GradientReducer {
 public:
  /// Backward has finished node `node`: its slice of `grads` is written and stays untouched
  /// until `reduce` returns.
  virtual void gradients_ready(std::size_t node, std::span<float> grads, std::size_t rows) = 0;
  /// Backward is over; on return every gradient is the mean over every rank's rows.
  virtual void reduce(std::span<float> grads, std::size_t rows) = 0;

  /// With gradient accumulation the two calls above are not made; instead, for each batch:
  /// whether every rank's gradients are finite (`finite`: this rank's), so that all ranks
  /// skip the same batches...
  virtual bool all_finite(bool finite) = 0;
  /// ...and once per update: `sums` (this rank's gradients times rows, summed over the
  /// update's batches) and their `rows`, each made the sum over every rank.
  virtual void reduce_sums(std::span<float> sums, std::uint64_t& rows) = 0;

 protected:
  GradientReducer() = default;
  GradientReducer(const GradientReducer&) = default;
  GradientReducer& operator=(const GradientReducer&) = default;
  ~GradientReducer() = default;
};

}  // namespace memopt
