#pragma once
// AnyBatches: any range of labelled batches (float rows or 8-bit images) behind one type, for
// options such as fit's `validation_data` that cannot be templates.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>

#include "memopt/core/error.hpp"
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

/// A non-owning view of one batch of 8-bit images, what AnyBatches hands out for a range of
/// `LabeledPixelBatch` (`data::ImageBatch`).
struct PixelBatchRef {
  std::span<const std::uint8_t> pixels_;
  std::span<const std::int32_t> labels_;
  std::size_t height_ = 0;
  std::size_t width_ = 0;
  std::size_t channels_ = 0;

  std::span<const std::uint8_t> pixels() const { return pixels_; }
  std::span<const std::int32_t> labels() const { return labels_; }
  std::size_t size() const { return labels_.size(); }
  std::size_t height() const { return height_; }
  std::size_t width() const { return width_; }
  std::size_t channels() const { return channels_; }
};
static_assert(LabeledPixelBatch<PixelBatchRef>);

/// A non-owning view of one batch with float targets, what AnyBatches hands out for a range
/// of `FloatTargetBatch` (`data::TargetBatch`).
struct TargetBatchRef {
  std::span<const float> features_;
  std::span<const float> targets_;
  std::size_t width_ = 0;
  std::size_t target_width_ = 0;
  std::size_t rows_ = 0;

  std::span<const float> features() const { return features_; }
  std::span<const float> targets() const { return targets_; }
  std::size_t size() const { return rows_; }
  std::size_t width() const { return width_; }
  std::size_t target_width() const { return target_width_; }
};
static_assert(FloatTargetBatch<TargetBatchRef>);

/// Holds a range of `TrainingBatch` (float rows with class indices or float targets, or 8-bit
/// images) by value and walks it on demand, handing out `BatchRef`, `TargetBatchRef` or
/// `PixelBatchRef`.
///
/// ```cpp
/// mo::data::AnyBatches val = test | mo::data::batch(256);
/// val.for_each([](const auto& b) { /* a BatchRef, or a PixelBatchRef for images */ });
/// ```
class AnyBatches {
 public:
  AnyBatches() = default;

  template <std::ranges::input_range R>
  requires(!std::same_as<std::remove_cvref_t<R>, AnyBatches> &&
           TrainingBatch<std::ranges::range_reference_t<R>>)
      AnyBatches(R&& range)  // NOLINT: implicit, so that `.validation_data = test | batch(256)`
      : impl_(std::make_shared<Model<std::remove_cvref_t<R>>>(std::forward<R>(range))) {}

  /// A range that is not of batches (a data::Dataset, a range of data::Sample): rejected with
  /// a message that says what to add, rather than "cannot convert" from the FitOptions.
  template <std::ranges::input_range R>
  requires(!std::same_as<std::remove_cvref_t<R>, AnyBatches> &&
           !TrainingBatch<std::ranges::range_reference_t<R>>)
      AnyBatches(R&&) {  // NOLINT: implicit, as above
    static_assert(::memopt::detail::dependent_false<R>,
                  "validation_data / evaluate: the data must be batched: add "
                  "`| mo::data::batch(N)` (a range of data::LabeledBatch or data::ImageBatch; this "
                  "range yields single samples or something else)");
  }

  explicit operator bool() const { return impl_ != nullptr; }

  /// Calls `f(BatchRef)`, `f(TargetBatchRef)` for float targets or `f(PixelBatchRef)` for 8-bit
  /// images, for each batch in order; an `f` that returns bool stops the walk by returning
  /// false (fit stops mid-epoch so). An `f` that does not take the kind it meets raises
  /// `memopt::error`.
  template <class F>
  void for_each(F&& f) const {
    if (!impl_) return;
    using Fn = std::remove_reference_t<F>;
    const Visitors visit{&visit_one<Fn, BatchRef>, &visit_one<Fn, PixelBatchRef>,
                         &visit_one<Fn, TargetBatchRef>};
    impl_->walk(visit, const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  }

 private:
  struct Visitors {
    bool (*floats)(void*, const BatchRef&);
    bool (*pixels)(void*, const PixelBatchRef&);
    bool (*targets)(void*, const TargetBatchRef&);
  };
  // Whether to go on after `b`; float rows with class indices every visitor must take.
  template <class Fn, class Ref>
  static bool visit_one(void* ctx, const Ref& b) {
    Fn& f = *static_cast<Fn*>(ctx);
    if constexpr (std::same_as<Ref, BatchRef> || std::invocable<Fn&, const Ref&>) {
      if constexpr (std::same_as<std::invoke_result_t<Fn&, const Ref&>, bool>) {
        return f(b);
      } else {
        f(b);
        return true;
      }
    } else if constexpr (std::same_as<Ref, PixelBatchRef>) {
      throw error(
          "AnyBatches::for_each: expected batches of floats, found 8-bit images (this visitor "
          "does not take a PixelBatchRef)");
    } else {
      throw error(
          "AnyBatches::for_each: expected batches of class indices, found float targets (this "
          "visitor does not take a TargetBatchRef)");
    }
  }
  // Hands `b` to the visitor of its kind, as a reference type; whether to go on.
  template <class B>
  static bool visit_batch(const Visitors& visit, void* ctx, const B& b) {
    if constexpr (FloatTargetBatch<B>) {
      return visit.targets(ctx, TargetBatchRef{std::span<const float>(b.features()),
                                               std::span<const float>(b.targets()),
                                               static_cast<std::size_t>(b.width()),
                                               static_cast<std::size_t>(b.target_width()),
                                               static_cast<std::size_t>(b.size())});
    } else if constexpr (LabeledPixelBatch<B>) {
      return visit.pixels(ctx, PixelBatchRef{std::span<const std::uint8_t>(b.pixels()),
                                             std::span<const std::int32_t>(b.labels()),
                                             static_cast<std::size_t>(b.height()),
                                             static_cast<std::size_t>(b.width()),
                                             static_cast<std::size_t>(b.channels())});
    } else {
      return visit.floats(ctx, BatchRef{std::span<const float>(b.features()),
                                        std::span<const std::int32_t>(b.labels()),
                                        static_cast<std::size_t>(b.width())});
    }
  }
  struct Concept {
    virtual ~Concept() = default;
    virtual void walk(const Visitors& visit, void* ctx) = 0;
  };
  template <class R>
  struct Model final : Concept {
    explicit Model(R r) : range(std::move(r)) {}
    void walk(const Visitors& visit, void* ctx) override {
      for (const auto& b : range)
        if (!visit_batch(visit, ctx, b)) return;
    }
    R range;
  };
  std::shared_ptr<Concept> impl_;
};

}  // namespace memopt::data
