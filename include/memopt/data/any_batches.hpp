#pragma once
// AnyBatches: any range of labelled batches behind one type, for options such as
// fit's `validation_data` that cannot be templates.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>

#include "memopt/core/type_list.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {

/// A non-owning view of one batch, the element type AnyBatches hands out.
struct BatchRef {
  std::span<const float> features_;
  std::span<const std::int32_t> labels_;
  std::size_t width_ = 0;

  std::span<const float> features() const { return features_; }
  std::span<const std::int32_t> labels() const { return labels_; }
  std::size_t size() const { return labels_.size(); }
  std::size_t width() const { return width_; }
};
static_assert(LabeledBatch<BatchRef>);

/// Holds a range of LabeledBatch by value and walks it on demand.
///
/// ```cpp
/// mo::data::AnyBatches val = test | mo::data::batch(256);
/// val.for_each([](const mo::data::BatchRef& b) { /* ... */ });
/// ```
class AnyBatches {
 public:
  AnyBatches() = default;

  template <std::ranges::input_range R>
  requires(!std::same_as<std::remove_cvref_t<R>, AnyBatches> &&
           LabeledBatch<std::ranges::range_reference_t<R>>)
      AnyBatches(R&& range)  // NOLINT: implicit, so that `.validation_data = test | batch(256)`
      : impl_(std::make_shared<Model<std::remove_cvref_t<R>>>(std::forward<R>(range))) {}

  /// A range that is not of batches (a data::Dataset, a range of data::Sample): rejected with
  /// a message that says what to add, rather than "cannot convert" from the FitOptions.
  template <std::ranges::input_range R>
  requires(!std::same_as<std::remove_cvref_t<R>, AnyBatches> &&
           !LabeledBatch<std::ranges::range_reference_t<R>>)
      AnyBatches(R&&) {  // NOLINT: implicit, as above
    static_assert(::memopt::detail::dependent_false<R>,
                  "validation_data / evaluate: the data must be batched: add "
                  "`| mo::data::batch(N)` (a range of data::LabeledBatch; this range yields single "
                  "samples or something else)");
  }

  explicit operator bool() const { return impl_ != nullptr; }

  /// Calls `f(BatchRef)` for each batch, in order.
  template <class F>
  void for_each(F&& f) const {
    if (!impl_) return;
    auto thunk = [](void* ctx, const BatchRef& b) {
      (*static_cast<std::remove_reference_t<F>*>(ctx))(b);
    };
    impl_->walk(thunk, const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  }

 private:
  using Visit = void (*)(void*, const BatchRef&);
  struct Concept {
    virtual ~Concept() = default;
    virtual void walk(Visit visit, void* ctx) = 0;
  };
  template <class R>
  struct Model final : Concept {
    explicit Model(R r) : range(std::move(r)) {}
    void walk(Visit visit, void* ctx) override {
      for (const auto& b : range) {
        const auto features = std::span<const float>(b.features());
        const auto labels = std::span<const std::int32_t>(b.labels());
        visit(ctx, BatchRef{features, labels, static_cast<std::size_t>(b.width())});
      }
    }
    R range;
  };
  std::shared_ptr<Concept> impl_;
};

}  // namespace memopt::data
