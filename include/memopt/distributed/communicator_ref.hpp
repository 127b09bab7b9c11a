#pragma once
// distributed::CommunicatorRef: any Communicator, by pointer, behind one type (FitOptions').

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

#include "memopt/distributed/communicator.hpp"

namespace memopt::distributed {

/// A non-owning reference to a Communicator of any type, or to none (the default). The
/// communicator must outlive the reference; FitOptions holds one so that fit, which is not
/// a template on the transport, can use any.
///
/// ```cpp
/// mo::distributed::LocalCommunicator comm;  // or an MpiCommunicator, a ThreadCommunicator
/// mo::distributed::CommunicatorRef ref = &comm;
/// ```
class CommunicatorRef {
 public:
  CommunicatorRef() = default;
  CommunicatorRef(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): `= nullptr`
  // same_as first: clang 16 recurses when a converting constructor checks a concept on the
  // class itself.
  template <class C>
  requires(!std::same_as<std::remove_cv_t<C>, CommunicatorRef> && Communicator<C>)
      CommunicatorRef(C* c)  // NOLINT(google-explicit-constructor): `.communicator = &comm`
      : self_(c), ops_(c ? &ops_for<C> : nullptr) {}

  explicit operator bool() const { return ops_ != nullptr; }

  // Without a communicator: one rank, and the collectives leave the values as they are.
  int rank() const { return ops_ ? ops_->rank(self_) : 0; }
  int size() const { return ops_ ? ops_->size(self_) : 1; }
  void all_reduce_sum(std::span<float> values) const {
    if (ops_) ops_->sum_floats(self_, values);
  }
  void all_reduce_sum(std::span<double> values) const {
    if (ops_) ops_->sum_doubles(self_, values);
  }
  void broadcast(std::span<float> values, int root) const {
    if (ops_) ops_->broadcast(self_, values, root);
  }
  void barrier() const {
    if (ops_) ops_->barrier(self_);
  }
  Request start_all_reduce_sum(std::span<float> values) const {
    return ops_ ? ops_->start_sum(self_, values) : Request{0};
  }
  bool test(Request request) const { return ops_ ? ops_->test(self_, request) : true; }
  void wait(Request request) const {
    if (ops_) ops_->wait(self_, request);
  }
  void notify_failure(std::string_view cause) const {
    if (ops_) ops_->notify_failure(self_, cause);
  }

 private:
  struct Ops {
    int (*rank)(const void*);
    int (*size)(const void*);
    void (*sum_floats)(void*, std::span<float>);
    void (*sum_doubles)(void*, std::span<double>);
    void (*broadcast)(void*, std::span<float>, int);
    void (*barrier)(void*);
    Request (*start_sum)(void*, std::span<float>);
    bool (*test)(void*, Request);
    void (*wait)(void*, Request);
    void (*notify_failure)(void*, std::string_view);
  };
  template <class C>
  static constexpr Ops ops_for{
      [](const void* c) { return static_cast<int>(static_cast<const C*>(c)->rank()); },
      [](const void* c) { return static_cast<int>(static_cast<const C*>(c)->size()); },
      [](void* c, std::span<float> v) { static_cast<C*>(c)->all_reduce_sum(v); },
      [](void* c, std::span<double> v) { static_cast<C*>(c)->all_reduce_sum(v); },
      [](void* c, std::span<float> v, int root) { static_cast<C*>(c)->broadcast(v, root); },
      [](void* c) { static_cast<C*>(c)->barrier(); },
      [](void* c, std::span<float> v) {
        return static_cast<Request>(static_cast<C*>(c)->start_all_reduce_sum(v));
      },
      [](void* c, Request r) { return static_cast<bool>(static_cast<C*>(c)->test(r)); },
      [](void* c, Request r) { static_cast<C*>(c)->wait(r); },
      [](void* c, std::string_view cause) { static_cast<C*>(c)->notify_failure(cause); }};

  void* self_ = nullptr;
  const Ops* ops_ = nullptr;
};

}  // namespace memopt::distributed
