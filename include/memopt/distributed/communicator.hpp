#pragma once
// distributed::Communicator: what data parallelism needs of a transport between ranks.

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>
#include <utility>

namespace memopt::distributed {

/// A non-blocking all-reduce in flight, as its communicator numbers it. Valid until it is
/// waited on, or until test returned true.
using Request = std::size_t;

/// A group of `size()` processes, this one being `rank()` (0-based), with the collectives
/// synchronous data parallelism uses. Every rank calls each collective in the same order;
/// the reductions work in place and every rank ends with the same values.
///
/// `notify_failure(cause)` tells every other rank that this one is leaving the protocol with
/// an error (fit calls it when an exception leaves it): their next call, or the one they wait
/// in, raises memopt::error naming this rank and `cause`, instead of waiting for it forever.
///
/// `start_all_reduce_sum` begins the same in-place sum without waiting for it (MPI's
/// MPI_Iallreduce): the values must stay untouched until `wait(request)` returns, or
/// `test(request)` returns true. `test` also lets the transport progress (Open MPI moves a
/// non-blocking collective on only inside MPI calls), so call it between other work.
///
/// ```cpp
/// static_assert(mo::distributed::Communicator<mo::distributed::LocalCommunicator>);
/// ```
template <class C>
concept Communicator = requires(C& c, const C& cc, std::span<float> f, std::span<double> d,
                                int root, Request r, std::string_view cause) {
  { cc.rank() } -> std::convertible_to<int>;
  { cc.size() } -> std::convertible_to<int>;
  c.all_reduce_sum(f);  // in place: each value becomes the sum over ranks
  c.all_reduce_sum(d);
  c.broadcast(f, root);  // in place: every rank ends with root's values
  c.barrier();
  { c.start_all_reduce_sum(f) } -> std::convertible_to<Request>;
  { c.test(r) } -> std::convertible_to<bool>;  // true once done; r is then spent
  c.wait(r);
  c.notify_failure(cause);
};

}  // namespace memopt::distributed
