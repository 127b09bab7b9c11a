#pragma once
// distributed::LocalCommunicator: one process, no transport.

#include <span>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"
#include "memopt/distributed/communicator.hpp"

namespace memopt::distributed {

/// A group of one: the sums are the values themselves, a broadcast from rank 0 leaves them
/// as they are. fit with it trains exactly as without a communicator.
///
/// ```cpp
/// mo::distributed::LocalCommunicator comm;
/// model.fit(batches, {.communicator = &comm});
/// ```
class LocalCommunicator {
 public:
  int rank() const { return 0; }
  int size() const { return 1; }
  void all_reduce_sum(std::span<float> /*values*/) {}
  void all_reduce_sum(std::span<double> /*values*/) {}
  void broadcast(std::span<float> /*values*/, int root) {
    if (root != 0)
      throw error("LocalCommunicator::broadcast: expected root 0 (the only rank), found " +
                  std::to_string(root));
  }
  void barrier() {}
  // One rank: a sum is done as soon as it starts.
  Request start_all_reduce_sum(std::span<float> /*values*/) { return 0; }
  bool test(Request /*request*/) { return true; }
  void wait(Request /*request*/) {}
  void notify_failure(std::string_view /*cause*/) {}  // nobody to tell
};

static_assert(Communicator<LocalCommunicator>);

}  // namespace memopt::distributed
