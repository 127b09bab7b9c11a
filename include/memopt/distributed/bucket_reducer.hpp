#pragma once
// distributed::BucketReducer: the gradients of a data-parallel step, all-reduced bucket by
// bucket while backward runs on (the executor's GradientReducer).
//
// The buckets are the plan's (plan/gradient_buckets.hpp): ranges of the flat gradient buffer
// in reverse node order. When backward has finished a bucket's lowest node, the bucket is
// weighted by this rank's rows and its non-blocking all-reduce starts; every later node's
// end tests the oldest sums in flight, which is where Open MPI moves them on (it has no
// progress thread by default). finish_step's reduce then waits for what is left. Every
// element gets the same arithmetic as one blocking all-reduce of the whole buffer: a weight,
// then a sum over ranks. With gradient accumulation, the buckets of the update's sums are
// all-reduced once per update instead, after its last batch's backward.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memopt/core/gradient_reducer.hpp"
#include "memopt/distributed/communicator.hpp"
#include "memopt/distributed/fit_sync.hpp"
#include "memopt/plan/gradient_buckets.hpp"

namespace memopt::distributed {

/// All-reduces `buckets` (in the order given: the order backward fills them) through `sync`'s
/// communicator, weighted by `sync`'s gradient_weight. Both must outlive it.
///
/// ```cpp
/// mo::distributed::LocalCommunicator comm;  // or an MpiCommunicator: one rank per process
/// mo::distributed::FitSync sync(&comm);
/// static constexpr auto buckets = mo::plan::gradient_buckets<Spec>();
/// mo::distributed::BucketReducer reducer(sync, {buckets.begin(), buckets.end()});
/// model.executor().set_gradient_reducer(&reducer);  // as fit does with a communicator
/// ```
class BucketReducer final : public GradientReducer {
 public:
  BucketReducer(const FitSync& sync, std::span<const plan::GradientBucket> buckets)
      : sync_(sync), buckets_(buckets), requests_(buckets.size()) {}

  void gradients_ready(std::size_t node, std::span<float> grads, std::size_t rows) override {
    if (!sync_.averages_gradients()) return;
    while (started_ < buckets_.size() && buckets_[started_].first_node >= node) start(grads, rows);
    while (done_ < started_ && sync_.communicator().test(requests_[done_])) ++done_;
  }

  void reduce(std::span<float> grads, std::size_t rows) override {
    if (!sync_.averages_gradients()) return;
    // A backend that never said which nodes were done: every bucket starts now.
    while (started_ < buckets_.size()) start(grads, rows);
    for (; done_ < started_; ++done_) sync_.communicator().wait(requests_[done_]);
    started_ = done_ = 0;
  }

  bool all_finite(bool finite) override {
    return sync_.averages_gradients() ? !sync_.any(!finite) : finite;
  }

  // Once per accumulated update: every bucket's sum at once (backward is over), unweighted,
  // and the rows beside them; the mean is taken after.
  void reduce_sums(std::span<float> sums, std::uint64_t& rows) override {
    if (!sync_.averages_gradients()) return;
    for (const plan::GradientBucket& b : buckets_)
      requests_[started_++] =
          sync_.communicator().start_all_reduce_sum(sums.subspan(b.offset, b.count));
    std::array<double, 1> total{static_cast<double>(rows)};
    sync_.communicator().all_reduce_sum(std::span<double>(total));
    for (; done_ < started_; ++done_) sync_.communicator().wait(requests_[done_]);
    started_ = done_ = 0;
    rows = static_cast<std::uint64_t>(total[0]);
  }

  /// The buckets whose all-reduce has started this step, and of those, the ones done.
  std::size_t started() const { return started_; }
  std::size_t done() const { return done_; }

 private:
  void start(std::span<float> grads, std::size_t rows) {
    const plan::GradientBucket& b = buckets_[started_];
    const std::span<float> slice = grads.subspan(b.offset, b.count);
    const float weight = sync_.gradient_weight(rows);
    for (float& g : slice) g *= weight;
    requests_[started_++] = sync_.communicator().start_all_reduce_sum(slice);
  }

  const FitSync& sync_;
  std::span<const plan::GradientBucket> buckets_;
  std::vector<Request> requests_;  // of the buckets started, by bucket
  std::size_t started_ = 0;        // buckets started this step
  std::size_t done_ = 0;           // of those, done (they finish in order)
};

}  // namespace memopt::distributed
