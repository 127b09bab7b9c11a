#pragma once
// distributed::Communicator: what data parallelism needs of a transport between ranks.

#include <concepts>
#include <span>
#include <utility>

namespace memopt::distributed {

/// A group of `size()` processes, this one being `rank()` (0-based), with the collectives
/// synchronous data parallelism uses. Every rank calls each collective in the same order;
/// the reductions work in place and every rank ends with the same values.
///
/// ```cpp
/// static_assert(mo::distributed::Communicator<mo::distributed::LocalCommunicator>);
/// ```
template <class C>
concept Communicator = requires(C& c, const C& cc, std::span<float> f, std::span<double> d,
                                int root) {
  { cc.rank() } -> std::convertible_to<int>;
  { cc.size() } -> std::convertible_to<int>;
  c.all_reduce_sum(f);  // in place: each value becomes the sum over ranks
  c.all_reduce_sum(d);
  c.broadcast(f, root);  // in place: every rank ends with root's values
  c.barrier();
};

}  // namespace memopt::distributed
