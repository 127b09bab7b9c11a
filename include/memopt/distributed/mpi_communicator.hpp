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
#include <climits>
#include <cstddef>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/distributed/communicator.hpp"

namespace memopt::distributed {

/// The processes of an MPI communicator (MPI_COMM_WORLD unless given one), as launched by
/// `mpirun -np N ./program`. Constructing it initializes MPI unless something already did;
/// destroying it finalizes MPI only if it was the one that initialized it. Every failing MPI
/// call raises memopt::error naming the call, the rank and MPI's message.
///
/// ```cpp
/// int main(int argc, char** argv) {
///   mo::distributed::MpiCommunicator comm(argc, argv);
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
    if (!owns_mpi_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // Unwinding from an error that perhaps only this rank saw: the others may be waiting in
    // a collective, and MPI_Finalize would wait for them. End them all instead.
    if (std::uncaught_exceptions() > 0)
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
    if (root < 0 || root >= size_)
      throw error(message("broadcast", "expected a root rank in [0, " + std::to_string(size_) +
                                           "), found " + std::to_string(root)));
    for (std::size_t at = 0; at < values.size(); at += chunk) {
      const int n = count(values.size() - at);
      check(MPI_Bcast(values.data() + at, n, MPI_FLOAT, root, comm_), "MPI_Bcast");
    }
  }

  void barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  /// MPI_Iallreduce in place; `values` must stay untouched until the request is done.
  Request start_all_reduce_sum(std::span<float> values) {
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
    Pending& p = pending(request, "test");
    if (p.done) return true;
    int flag = 0;
    check(MPI_Testall(static_cast<int>(p.count), requests_.data() + p.first, &flag,
                      MPI_STATUSES_IGNORE),
          "MPI_Testall");
    if (flag) retire(p);
    return flag != 0;
  }
  void wait(Request request) {
    Pending& p = pending(request, "wait");
    if (p.done) return;
    check(MPI_Waitall(static_cast<int>(p.count), requests_.data() + p.first, MPI_STATUSES_IGNORE),
          "MPI_Waitall");
    retire(p);
  }

  /// Ends every process of the communicator (MPI_Abort): for an error that only this rank
  /// saw, which the others, waiting in a collective, would otherwise wait on forever.
  [[noreturn]] void abort(int code = 1) {
    MPI_Abort(comm_, code);
    std::terminate();  // MPI_Abort does not return; in case it does
  }

 private:
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
  }

  template <class T>
  void sum(T* values, std::size_t n, MPI_Datatype type) {
    for (std::size_t at = 0; at < n; at += chunk)
      check(MPI_Allreduce(MPI_IN_PLACE, values + at, count(n - at), type, MPI_SUM, comm_),
            "MPI_Allreduce");
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
  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
  std::vector<Pending> pending_;
  std::vector<MPI_Request> requests_;
  std::size_t retired_ = 0;  // entries of pending_ done
};

static_assert(Communicator<MpiCommunicator>);

}  // namespace memopt::distributed
