#pragma once
// AnyOptimizer: any type that satisfies the Optimizer concept, behind one value type, so that
// Model holds whatever compile() was given without naming it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/train/optimizer.hpp"

namespace memopt {

/// An optimizer of any type. Backends that need the concrete type (the CUDA backend's fused
/// update) get it back with `target<O>()`, as from std::function.
///
/// ```cpp
/// mo::AnyOptimizer opt{mo::AdamW{}};
/// const std::vector<mo::ParameterRange> ranges{{"dense/kernel", "kernel", 0, 784 * 128}};
/// std::vector<float> w(784 * 128), g(w.size()), state(opt.slots() * w.size());
/// opt.build(ranges);
/// opt.initialize_state(state);
/// opt.update(w, g, state, /*iteration=*/0);
/// const mo::AdamW* adamw = opt.target<mo::AdamW>();  // nullptr for any other type
/// ```
class AnyOptimizer {
 public:
  AnyOptimizer() = default;
  // same_as first: copying an AnyOptimizer must not ask whether it is an Optimizer (clang 16
  // rejects that recursion).
  template <class O>
  requires(!std::same_as<O, AnyOptimizer> && Optimizer<O>) explicit AnyOptimizer(O o)
      : self_(std::make_unique<Holder<O>>(std::move(o))) {}
  AnyOptimizer(const AnyOptimizer& other) : self_(other.self_ ? other.self_->clone() : nullptr) {}
  AnyOptimizer(AnyOptimizer&&) noexcept = default;
  AnyOptimizer& operator=(const AnyOptimizer& other) {
    if (this != &other) self_ = other.self_ ? other.self_->clone() : nullptr;
    return *this;
  }
  AnyOptimizer& operator=(AnyOptimizer&&) noexcept = default;

  explicit operator bool() const { return self_ != nullptr; }

  std::string_view name() const { return get().name(); }
  std::size_t slots() const { return get().slots(); }
  std::vector<std::string> slot_names() const { return get().slot_names(); }
  double learning_rate(std::int64_t iteration) const { return get().learning_rate(iteration); }
  /// Keras's `optimizer.learning_rate = value`; raises for an optimizer that cannot.
  void set_learning_rate(double value) { get().set_learning_rate(value); }
  void build(std::span<const ParameterRange> ranges) { get().build(ranges); }
  void initialize_state(std::span<float> state) const { get().initialize_state(state); }
  /// Whether initialize_state writes anything but zeros.
  bool has_initial_state() const { return get().has_initial_state(); }
  void update(std::span<float> w, std::span<float> g, std::span<float> state,
              std::int64_t iteration) const {
    get().update(w, g, state, iteration);
  }

  /// The optimizer itself if it is an `O`, else nullptr.
  template <class O>
  O* target() {
    return self_ && self_->type() == type_id<O>() ? &static_cast<Holder<O>&>(*self_).o : nullptr;
  }
  template <class O>
  const O* target() const {
    return self_ && self_->type() == type_id<O>() ? &static_cast<const Holder<O>&>(*self_).o
                                                  : nullptr;
  }

 private:
  using TypeId = const void*;
  template <class O>
  static TypeId type_id() {
    static constexpr char tag = 0;
    return &tag;
  }

  struct Interface {
    virtual ~Interface() = default;
    virtual std::unique_ptr<Interface> clone() const = 0;
    virtual TypeId type() const = 0;
    virtual std::string_view name() const = 0;
    virtual std::size_t slots() const = 0;
    virtual std::vector<std::string> slot_names() const = 0;
    virtual double learning_rate(std::int64_t iteration) const = 0;
    virtual void set_learning_rate(double value) = 0;
    virtual void build(std::span<const ParameterRange> ranges) = 0;
    virtual void initialize_state(std::span<float> state) const = 0;
    virtual bool has_initial_state() const = 0;
    virtual void update(std::span<float> w, std::span<float> g, std::span<float> state,
                        std::int64_t iteration) const = 0;
  };

  template <class O>
  struct Holder final : Interface {
    explicit Holder(O opt) : o(std::move(opt)) {}
    std::unique_ptr<Interface> clone() const override { return std::make_unique<Holder>(o); }
    TypeId type() const override { return type_id<O>(); }
    std::string_view name() const override { return O::name; }
    std::size_t slots() const override { return o.slots(); }
    std::vector<std::string> slot_names() const override { return o.slot_names(); }
    double learning_rate(std::int64_t iteration) const override {
      return o.learning_rate(iteration);
    }
    void set_learning_rate(double value) override {
      if constexpr (requires { o.set_learning_rate(value); })
        o.set_learning_rate(value);
      else
        throw error("learning_rate: optimizer \"" + std::string(O::name) +
                    "\" has no settable learning rate (it defines no set_learning_rate)");
    }
    void build(std::span<const ParameterRange> ranges) override {
      if constexpr (requires { o.build(ranges); }) o.build(ranges);
    }
    void initialize_state(std::span<float> state) const override {
      if constexpr (requires { o.initialize_state(state); })
        o.initialize_state(state);
      else
        for (float& v : state) v = 0.0f;
    }
    bool has_initial_state() const override {
      return requires(std::span<float> s) {
        o.initialize_state(s);
      };
    }
    void update(std::span<float> w, std::span<float> g, std::span<float> state,
                std::int64_t iteration) const override {
      o.update(w, g, state, iteration);
    }
    O o;
  };

  Interface& get() const {
    if (!self_) throw error("optimizer: none set; call compile(optimizer, loss, metrics...) first");
    return *self_;
  }

  std::unique_ptr<Interface> self_;
};

}  // namespace memopt
