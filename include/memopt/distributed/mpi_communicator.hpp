#pragma once
// distributed::MpiCommunicator: the Communicator over MPI (link memopt::mpi).
//
// The only memopt header that includes <mpi.h>: a program that never includes it links no
// MPI library.

// Only MPI's C interface: the C++ bindings (removed from MPI 3) warn under -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/distributed/communicator.hpp"

namespace memopt::distributed {

/// The processes of an MPI communicator (MPI_COMM_WORLD unless given one), as launched by
/// `mpirun -np N ./program`. Constructing it initializes MPI unless something already did;
/// destroying it finalizes MPI only if it was the one that initialized it. Every failing MPI
/// call raises memopt::error naming the call, the rank and MPI's message.
///
/// A rank that leaves fit with an error tells the others (notify_failure, on a duplicate of
/// the communicator, so that the message never meets a collective): every call waiting on
/// it, or made after, raises memopt::error naming that rank and its error. Catch it in main
/// and return: the communicator then finalizes MPI on every rank. A rank that is killed
/// sends nothing; `mpirun` ends the job then, naming the rank it lost.
///
/// ```cpp
/// #include <memopt/distributed/mpi_communicator.hpp>  // target memopt::mpi
/// #include <memopt/memopt.hpp>
/// namespace mo = memopt;
/// using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
///
/// int main(int argc, char** argv) {
///   mo::distributed::MpiCommunicator comm(argc, argv);
///   auto model = mo::Model<Net, mo::Input<784>>{42};  // the same seed on every process
///   model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
///   auto [data, test] = mo::data::fashion_mnist();
///   auto train = data | mo::data::shard(comm.size(), comm.rank()) | mo::data::batch(32);
///   model.fit(train, {.epochs = 5, .communicator = &comm});
/// }
/// ```
class MpiCommunicator {
 public:
  /// MPI_COMM_WORLD, initializing MPI (with the program's arguments) if needed.
  MpiCommunicator(int& argc, char**& argv) { initialize(&argc, &argv); }
  /// MPI_COMM_WORLD, initializing MPI (without arguments) if needed.
  MpiCommunicator() { initialize(nullptr, nullptr); }
  /// An existing communicator of an MPI that the caller initialized and will finalize.
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) throw error("MpiCommunicator: MPI is not initialized (call MPI_Init first)");
    set_up();
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  ~MpiCommunicator() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (notice_request_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&notice_request_);
      MPI_Wait(&notice_request_, MPI_STATUS_IGNORE);
    }
    if (notices_ != MPI_COMM_NULL) MPI_Comm_free(&notices_);
    if (!owns_mpi_) return;
    // Unwinding from an error that the other ranks were not told of: they may be waiting in
    // a collective, and MPI_Finalize would wait for them. End them all instead.
    if (std::uncaught_exceptions() > 0 && failure_.empty())
      MPI_Abort(comm_, 1);
    else
      MPI_Finalize();
  }

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm native() const { return comm_; }

  void all_reduce_sum(std::span<float> values) { sum(values.data(), values.size(), MPI_FLOAT); }
  void all_reduce_sum(std::span<double> values) { sum(values.data(), values.size(), MPI_DOUBLE); }

  void broadcast(std::span<float> values, int root) {
    require_usable("broadcast");
    if (root < 0 || root >= size_)
      throw error(message("broadcast", "expected a root rank in [0, " + std::to_string(size_) +
                                           "), found " + std::to_string(root)));
    for (std::size_t at = 0; at < values.size(); at += chunk) {
      const int n = count(values.size() - at);
      MPI_Request r = MPI_REQUEST_NULL;
      check(MPI_Ibcast(values.data() + at, n, MPI_FLOAT, root, comm_, &r), "MPI_Ibcast");
      complete(&r, 1, "MPI_Ibcast");
    }
  }

  void barrier() {
    require_usable("barrier");
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
    complete(&r, 1, "MPI_Ibarrier");
  }

  /// MPI_Iallreduce in place; `values` must stay untouched until the request is done.
  Request start_all_reduce_sum(std::span<float> values) {
    require_usable("start_all_reduce_sum");
    const Request id = pending_.size();
    pending_.push_back({requests_.size(), 0, false});
    for (std::size_t at = 0; at < values.size(); at += chunk) {
      MPI_Request r = MPI_REQUEST_NULL;
      check(MPI_Iallreduce(MPI_IN_PLACE, values.data() + at, count(values.size() - at), MPI_FLOAT,
                           MPI_SUM, comm_, &r),
            "MPI_Iallreduce");
      requests_.push_back(r);
      ++pending_.back().count;
    }
    return id;
  }
  /// Whether the request is done (MPI_Testall, which also progresses it).
  bool test(Request request) {
    require_usable("test");
    Pending& p = pending(request, "test");
    if (p.done) return true;
    int flag = 0;
    check(MPI_Testall(static_cast<int>(p.count), requests_.data() + p.first, &flag,
                      MPI_STATUSES_IGNORE),
          "MPI_Testall");
    if (!flag) check_notice();
    if (flag) retire(p);
    return flag != 0;
  }
  void wait(Request request) {
    require_usable("wait");
    Pending& p = pending(request, "wait");
    if (p.done) return;
    complete(requests_.data() + p.first, static_cast<int>(p.count), "MPI_Iallreduce");
    retire(p);
  }

  /// Sends `cause` (its first kNoticeBytes) to every other rank, whose waiting or next call
  /// then raises memopt::error naming this rank and it; this rank's own later calls raise one
  /// too, since it left the collectives' order. Nothing is sent for a failure that another
  /// rank's notice caused, nor twice.
  void notify_failure(std::string_view cause) {
    if (!failure_.empty()) return;
    failure_ = "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
               " (this one) stopped with an error: " + std::string(cause);
    const std::string_view text = cause.substr(0, kNoticeBytes);
    // Eager: a message this small is buffered at once, so no send waits for its receiver.
    for (int r = 0; r < size_; ++r)
      if (r != rank_)
        check(
            MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, kNoticeTag, notices_),
            "MPI_Send");
  }

  /// Whether a rank stopped with an error that every rank was told of (notify_failure sent
  /// or received): each rank then raises its own error and may finalize, rather than abort.
  bool stopped() const { return !failure_.empty(); }

  /// Ends every process of the communicator (MPI_Abort): for an error that only this rank
  /// saw, which the others, waiting in a collective, would otherwise wait on forever.
  [[noreturn]] void abort(int code = 1) {
    MPI_Abort(comm_, code);
    std::terminate();  // MPI_Abort does not return; in case it does
  }

 private:
  // The longest cause a failure notice carries, and its tag on notices_.
  static constexpr std::size_t kNoticeBytes = 1024;
  static constexpr int kNoticeTag = 1;

  // MPI counts are ints: larger spans go in pieces.
  static constexpr std::size_t chunk = static_cast<std::size_t>(INT_MAX);
  static int count(std::size_t left) { return static_cast<int>(std::min(left, chunk)); }

  // A started sum: its MPI requests (one per chunk) in requests_.
  struct Pending {
    std::size_t first = 0;
    std::size_t count = 0;
    bool done = false;
  };
  Pending& pending(Request request, const char* call) {
    if (request >= pending_.size())
      throw error(message(call, "no request " + std::to_string(request) + " in flight"));
    return pending_[request];
  }
  // Once every started sum is done, the ids start again from 0: the vectors keep their
  // capacity, so steps after the first allocate nothing.
  void retire(Pending& p) {
    p.done = true;
    if (++retired_ == pending_.size()) {
      pending_.clear();
      requests_.clear();
      retired_ = 0;
    }
  }

  void initialize(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      if (const int rc = MPI_Init(argc, argv); rc != MPI_SUCCESS)
        throw error("MpiCommunicator: MPI_Init failed: " + error_string(rc));
      owns_mpi_ = true;
    }
    set_up();
  }

  void set_up() {
    // Errors come back as codes, so that they become memopt::error rather than an abort.
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    check(MPI_Comm_dup(comm_, &notices_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(notices_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Irecv(notice_.data(), static_cast<int>(notice_.size()), MPI_CHAR, MPI_ANY_SOURCE,
                    kNoticeTag, notices_, &notice_request_),
          "MPI_Irecv");
  }

  template <class T>
  void sum(T* values, std::size_t n, MPI_Datatype type) {
    require_usable("all_reduce_sum");
    for (std::size_t at = 0; at < n; at += chunk) {
      MPI_Request r = MPI_REQUEST_NULL;
      check(MPI_Iallreduce(MPI_IN_PLACE, values + at, count(n - at), type, MPI_SUM, comm_, &r),
            "MPI_Iallreduce");
      complete(&r, 1, "MPI_Iallreduce");
    }
  }

  // Waits for `requests` as MPI_Waitall would, but raises memopt::error as soon as another
  // rank's failure notice arrives: that rank will never take its part.
  void complete(MPI_Request* requests, int n, const char* call) {
    for (;;) {
      int done = 0;
      check(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE), call);
      if (done) return;
      check_notice();
      std::this_thread::yield();
    }
  }

  // Raises memopt::error if another rank's failure notice has arrived.
  void check_notice() {
    if (notice_request_ == MPI_REQUEST_NULL) return;
    int arrived = 0;
    MPI_Status status;
    check(MPI_Test(&notice_request_, &arrived, &status), "MPI_Test");
    if (!arrived) return;
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    failure_ = "rank " + std::to_string(status.MPI_SOURCE) + " of " + std::to_string(size_) +
               " stopped with an error: " +
               std::string(notice_.data(), static_cast<std::size_t>(std::max(length, 0)));
    throw error("MpiCommunicator: " + failure_ + " (rank " + std::to_string(rank_) +
                " stops with it)");
  }

  // After a failure the ranks' collectives no longer pair up: every later call raises.
  void require_usable(const char* call) const {
    if (!failure_.empty()) throw error(message(call, "the ranks stopped after " + failure_));
  }

  static std::string error_string(int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS)
      return "MPI error " + std::to_string(rc);
    return std::string(text, static_cast<std::size_t>(length));
  }
  std::string message(const char* call, const std::string& what) const {
    return "MpiCommunicator: " + std::string(call) + " failed on rank " + std::to_string(rank_) +
           " of " + std::to_string(size_) + ": " + what;
  }
  void check(int rc, const char* call) const {
    if (rc != MPI_SUCCESS) throw error(message(call, error_string(rc)));
  }

  MPI_Comm comm_ = MPI_COMM_WORLD;
  MPI_Comm notices_ = MPI_COMM_NULL;               // failure notices only: a duplicate of comm_
  MPI_Request notice_request_ = MPI_REQUEST_NULL;  // the receive kept posted on notices_
  std::array<char, kNoticeBytes> notice_{};
  std::string failure_;  // once a rank stopped with an error: which, and why
  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
  std::vector<Pending> pending_;
  std::vector<MPI_Request> requests_;
  std::size_t retired_ = 0;  // entries of pending_ done
};

static_assert(Communicator<MpiCommunicator>);

}  // namespace memopt::distributed
