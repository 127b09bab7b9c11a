#pragma once
// AnyMetric: a streaming metric of any type behind one, as Model::compile stores its metrics.

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/train/metric.hpp"

namespace memopt {

/// Holds any `Metric` by value (copies copy it) and forwards to it; an update with targets the
/// metric does not read raises `memopt::error` naming it (compile() rules that out first).
///
/// ```cpp
/// std::vector<float> p(32), y(32);  // predicted probabilities, 0/1 targets
/// mo::AnyMetric m(mo::metrics::AUC{});
/// m.update_state(mo::MetricBatch<float>{p.data(), p.size(), 1, y.data(), 1});
/// double auc = m.result();
/// ```
class AnyMetric {
 public:
  // same_as first: clang 16 checks Metric<AnyMetric> on copies otherwise, which recurses.
  template <class M>
  requires(!std::same_as<M, AnyMetric> && Metric<M>) explicit AnyMetric(M metric)
      : self_(std::make_unique<Holder<M>>(std::move(metric))) {}
  AnyMetric(const AnyMetric& other) : self_(other.self_->clone()) {}
  AnyMetric& operator=(const AnyMetric& other) {
    if (this != &other) self_ = other.self_->clone();
    return *this;
  }
  AnyMetric(AnyMetric&&) noexcept = default;
  AnyMetric& operator=(AnyMetric&&) noexcept = default;

  std::string_view name() const { return self_->name(); }
  void reset_state() { self_->reset_state(); }
  double result() const { return self_->result(); }
  /// Whether the metric is a SummableMetric; state() is empty when it is not.
  bool summable() const { return self_->summable(); }
  std::span<double> state() { return self_->state(); }
  void update_state(const MetricBatch<std::int32_t>& b) { self_->update(b); }
  void update_state(const MetricBatch<float>& b) { self_->update(b); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual std::unique_ptr<Concept> clone() const = 0;
    virtual std::string_view name() const = 0;
    virtual void reset_state() = 0;
    virtual double result() const = 0;
    virtual bool summable() const = 0;
    virtual std::span<double> state() = 0;
    virtual void update(const MetricBatch<std::int32_t>& b) = 0;
    virtual void update(const MetricBatch<float>& b) = 0;
  };
  template <class M>
  struct Holder final : Concept {
    explicit Holder(M m) : metric(std::move(m)) {}
    std::unique_ptr<Concept> clone() const override { return std::make_unique<Holder>(metric); }
    std::string_view name() const override { return M::name; }
    void reset_state() override { metric.reset_state(); }
    double result() const override { return static_cast<double>(metric.result()); }
    bool summable() const override { return SummableMetric<M>; }
    std::span<double> state() override {
      if constexpr (SummableMetric<M>)
        return metric.state();
      else
        return {};
    }
    void update(const MetricBatch<std::int32_t>& b) override { forward(b, "class indices"); }
    void update(const MetricBatch<float>& b) override { forward(b, "float targets"); }
    template <class Target>
    void forward(const MetricBatch<Target>& b, const char* kind) {
      if constexpr (requires { metric.update_state(b); })
        metric.update_state(b);
      else
        throw error(std::string(M::name) + ": this metric does not read " + kind);
    }
    M metric;
  };
  std::unique_ptr<Concept> self_;
};

}  // namespace memopt
