#pragma once
// distributed::ThreadGroup: data parallelism between threads of one process.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/distributed/communicator.hpp"

namespace memopt::distributed {

class ThreadGroup;

/// One rank of a ThreadGroup: the Communicator that the thread running that rank hands to
/// fit. Each rank's handle is used by its own thread only.
///
/// Every collective meets the other ranks at a barrier, so `start_all_reduce_sum` sums at
/// once and its request is already done: threads that share memory step in lockstep anyway,
/// and summing one gradient bucket is a pass over a few buffers, shorter than handing it to
/// a helper thread would be.
class ThreadCommunicator {
 public:
  int rank() const { return rank_; }
  int size() const;
  void all_reduce_sum(std::span<float> values);
  void all_reduce_sum(std::span<double> values);
  void broadcast(std::span<float> values, int root);
  void barrier();
  Request start_all_reduce_sum(std::span<float> values) {
    all_reduce_sum(values);
    return 0;
  }
  bool test(Request /*request*/) { return true; }
  void wait(Request /*request*/) {}
  /// The other ranks' waiting or next collective raises memopt::error naming this rank and
  /// `cause`; only the first failure in the group is kept.
  void notify_failure(std::string_view cause);

 private:
  friend class ThreadGroup;
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(&group), rank_(rank) {}
  ThreadGroup* group_;
  int rank_;
};

static_assert(Communicator<ThreadCommunicator>);

/// `size` ranks that are threads of this process, exchanging values through shared memory.
/// Sums add the ranks' values in rank order, so every rank ends with the same bits, and the
/// same group sums the same way every run.
///
/// ```cpp
/// const std::uint64_t seed = 42;
/// mo::distributed::run_in_threads(2, [&](mo::distributed::ThreadCommunicator& comm) {
///   auto model = mo::Model<Net, mo::Input<784>>{seed + comm.rank()};
///   model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
///   model.fit(train | mo::data::shard(2, comm.rank()) | mo::data::batch(16),
///             {.epochs = 5, .communicator = &comm});
/// });
/// ```
class ThreadGroup {
 public:
  explicit ThreadGroup(int size)
      : size_(size), slots_(static_cast<std::size_t>(std::max(size, 0))) {
    if (size < 1)
      throw error("ThreadGroup: expected at least one rank, found " + std::to_string(size));
  }
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int size() const { return size_; }
  /// The rank whose failure the others were told of, or -1 while none has failed.
  int failed_rank() const {
    std::lock_guard lock(mutex_);
    return failed_rank_;
  }
  /// Rank `rank`'s handle, for the thread that runs that rank.
  ThreadCommunicator communicator(int rank) {
    if (rank < 0 || rank >= size_)
      throw error("ThreadGroup::communicator: expected a rank in [0, " + std::to_string(size_) +
                  "), found " + std::to_string(rank));
    return ThreadCommunicator(*this, rank);
  }

 private:
  friend class ThreadCommunicator;
  enum class Call : std::uint8_t { sum_floats, sum_doubles, broadcast, barrier };
  struct Slot {
    void* data = nullptr;
    std::size_t count = 0;
    Call call = Call::barrier;
    int root = 0;
  };
  static constexpr const char* call_name(Call c) {
    switch (c) {
      case Call::sum_floats:
        return "all_reduce_sum(float)";
      case Call::sum_doubles:
        return "all_reduce_sum(double)";
      case Call::broadcast:
        return "broadcast";
      case Call::barrier:
        return "barrier";
    }
    return "?";
  }

  // Posts this rank's call, waits for every rank's, and checks that they are the same call.
  // Each rank writes only its own slot, and only between two barriers of one collective.
  void meet(int rank, Slot slot) {
    slots_[static_cast<std::size_t>(rank)] = slot;
    arrive(rank);
    const Slot& first = slots_[0];
    for (std::size_t r = 1; r < slots_.size(); ++r) {
      const Slot& other = slots_[r];
      if (other.call != first.call || other.count != first.count || other.root != first.root)
        throw mismatch(first, static_cast<int>(r), other);
    }
  }

  // Error paths and once-per-fit calls are cold: GCC then optimizes them for size, which
  // keeps them out of the way of the per-step code and compiles them faster.
  [[gnu::cold]] static error mismatch(const Slot& first, int rank, const Slot& other) {
    return error("ThreadCommunicator: the ranks' collectives do not pair up: rank 0 called " +
                 describe(first) + ", rank " + std::to_string(rank) + " " + describe(other) +
                 " (every rank must call the same collectives in the same order)");
  }

  [[gnu::cold]] static std::string describe(const Slot& s) {
    std::string d = call_name(s.call);
    if (s.call != Call::barrier) d += " of " + std::to_string(s.count) + " values";
    if (s.call == Call::broadcast) d += " from root " + std::to_string(s.root);
    return d;
  }

  template <class T>
  void sum(int rank, std::span<T> values, Call call) {
    meet(rank, {values.data(), values.size(), call, 0});
    // Rank r sums its own part of the values, over every rank's buffer in rank order, and
    // writes the total back into every buffer: the parts are disjoint, so no two ranks
    // write one value.
    const std::size_t n = values.size(), ranks = slots_.size(), r = static_cast<std::size_t>(rank);
    const std::size_t begin = n * r / ranks, end = n * (r + 1) / ranks;
    for (std::size_t i = begin; i < end; ++i) {
      T total = static_cast<const T*>(slots_[0].data)[i];
      for (std::size_t k = 1; k < ranks; ++k) total += static_cast<const T*>(slots_[k].data)[i];
      for (std::size_t k = 0; k < ranks; ++k) static_cast<T*>(slots_[k].data)[i] = total;
    }
    arrive(rank);  // no buffer is given back before every rank has written its part
  }

  [[gnu::cold]] void broadcast(int rank, std::span<float> values, int root) {
    if (root < 0 || root >= size_)
      throw error("ThreadCommunicator::broadcast: expected a root rank in [0, " +
                  std::to_string(size_) + "), found " + std::to_string(root));
    meet(rank, {values.data(), values.size(), Call::broadcast, root});
    if (rank != root) {
      const float* from = static_cast<const float*>(slots_[static_cast<std::size_t>(root)].data);
      std::copy(from, from + values.size(), values.data());
    }
    arrive(rank);  // the root's values stay put until every rank has copied them
  }

  // A barrier: returns once every rank has arrived, or raises memopt::error once a rank
  // has left with an error (it will not arrive). A waiting rank polls briefly before it
  // sleeps, since the others are usually at most microseconds behind.
  void arrive(int rank) {
    std::unique_lock lock(mutex_);
    if (!failure_.empty()) throw failed(rank);
    const std::uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
      woken_.notify_all();
      return;
    }
    lock.unlock();
    for (int i = 0; i < kPolls; ++i) {
      if (published_.load(std::memory_order_acquire) != generation) return;
      if (stopped_.load(std::memory_order_acquire)) break;
      std::this_thread::yield();
    }
    lock.lock();
    woken_.wait(lock, [&] { return generation_ != generation || !failure_.empty(); });
    if (generation_ == generation) throw failed(rank);
  }

  [[gnu::cold]] void fail(int rank, std::string_view cause) {
    {
      std::lock_guard lock(mutex_);
      if (!failure_.empty()) return;  // a consequence of the first failure, or the same
      failed_rank_ = rank;
      failure_ = "rank " + std::to_string(rank) + " of " + std::to_string(size_) +
                 " stopped with an error: " + std::string(cause);
      stopped_.store(true, std::memory_order_release);
    }
    woken_.notify_all();
  }

  [[gnu::cold]] error failed(int rank) const {
    return error("ThreadCommunicator: " + failure_ + " (rank " + std::to_string(rank) +
                 " stops with it)");
  }

  static constexpr int kPolls = 200;  // yields before sleeping: up to a few hundred microseconds

  const int size_;
  std::vector<Slot> slots_;
  mutable std::mutex mutex_;
  std::condition_variable woken_;
  int arrived_ = 0;               // guarded by mutex_
  std::uint64_t generation_ = 0;  // guarded by mutex_: barriers completed
  std::string failure_;           // guarded by mutex_: the first rank's error, once one left
  int failed_rank_ = -1;          // guarded by mutex_
  std::atomic<std::uint64_t> published_{0};  // generation_, for the polling ranks
  std::atomic<bool> stopped_{false};         // !failure_.empty(), for the polling ranks
};

inline int ThreadCommunicator::size() const {
  return group_->size();
}
inline void ThreadCommunicator::all_reduce_sum(std::span<float> values) {
  group_->sum(rank_, values, ThreadGroup::Call::sum_floats);
}
inline void ThreadCommunicator::all_reduce_sum(std::span<double> values) {
  group_->sum(rank_, values, ThreadGroup::Call::sum_doubles);
}
inline void ThreadCommunicator::broadcast(std::span<float> values, int root) {
  group_->broadcast(rank_, values, root);
}
inline void ThreadCommunicator::barrier() {
  group_->meet(rank_, {});
  group_->arrive(rank_);  // no rank posts its next call before every rank has checked this one
}
inline void ThreadCommunicator::notify_failure(std::string_view cause) {
  group_->fail(rank_, cause);
}

/// Runs `rank_main(comm)` for each rank of a new ThreadGroup of `size`: rank 0 on the calling
/// thread, the others on threads of their own, and returns when all have. A rank whose
/// function raises tells the others, whose collectives raise in turn rather than wait for
/// it; once every thread has ended, the error of the rank that failed first is raised again
/// here (not the others', which only say that it failed).
template <class F>
void run_in_threads(int size, F&& rank_main) {
  ThreadGroup group(size);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
  auto run_rank = [&](int rank) noexcept {
    ThreadCommunicator comm = group.communicator(rank);
    try {
      rank_main(comm);
    } catch (...) {
      std::exception_ptr& e = errors[static_cast<std::size_t>(rank)];
      e = std::current_exception();
      std::string cause = "an exception that is not a std::exception";
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        cause = x.what();
      } catch (...) {
      }
      comm.notify_failure(cause);  // nothing if fit already told them, or another rank failed
    }
  };
  {
    std::vector<std::jthread> others;
    others.reserve(static_cast<std::size_t>(size - 1));
    for (int rank = 1; rank < size; ++rank) others.emplace_back(run_rank, rank);
    run_rank(0);
  }  // joins
  const int failed = group.failed_rank();
  if (failed >= 0 && errors[static_cast<std::size_t>(failed)])
    std::rethrow_exception(errors[static_cast<std::size_t>(failed)]);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace memopt::distributed
