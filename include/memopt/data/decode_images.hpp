#pragma once
// data::decode_images(decoder, options): image files decoded on worker threads, with a hard
// bound on the decoded bytes in flight.

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ranges>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/async_view.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/io/image/load.hpp"

namespace memopt::data {

/// What decoding does with a file it cannot read or decode: `raise` `memopt::error` naming
/// the file (the default, as Keras), or `skip` it and count it (`ImageDecoder::skipped()`).
enum class OnError : std::uint8_t { raise, skip };

namespace detail {
template <class File>
concept path_function = requires(const File& f) {
  f.path();
};
template <class File>
concept path_member = requires(const File& f) {
  f.path;
};
template <class File>
concept int_label = requires(const File& f) {
  static_cast<std::int32_t>(f.label);
};
}  // namespace detail

/// An element `decode_images` takes: a `label` member and a path, as a `path()` function (an
/// `ImageFile`, which builds it from its folder and name) or a `path` member.
template <class File>
concept image_file = (detail::path_function<File> ||
                      detail::path_member<File>)&&detail::int_label<File>;

/// Decodes an element with a path and a label (an `ImageFile`) into a `LabeledImage` of
/// fixed shape (`io::image::load_into`). It is a const, thread-safe callable: workers share
/// one. Copies share the count of skipped files and the first few reasons.
///
/// ```cpp
/// mo::data::ImageDecoder decode({.height = 64, .width = 64}, mo::data::OnError::skip);
/// mo::data::LabeledImage img = decode(mo::data::ImageFile{"photos/cats", "001.png", 3});
/// ```
class ImageDecoder {
 public:
  ImageDecoder() : ImageDecoder(io::image::LoadOptions{}) {}
  explicit ImageDecoder(io::image::LoadOptions options, OnError on_error = OnError::raise)
      : options_(options), on_error_(on_error), stats_(std::make_shared<Stats>()) {}

  template <image_file File>
  LabeledImage operator()(const File& file) const {
    LabeledImage out;
    out.label = static_cast<std::int32_t>(file.label);
    out.height = static_cast<std::uint32_t>(options_.height);
    out.width = static_cast<std::uint32_t>(options_.width);
    out.channels = static_cast<std::uint32_t>(io::image::channels_of(options_.color_mode));
    out.pixels.resize(options_.bytes());
    try {
      if constexpr (detail::path_function<File>) {
        io::image::load_into(file.path(), options_, out.pixels);
      } else {
        io::image::load_into(file.path, options_, out.pixels);
      }
    } catch (const error& e) {
      if (on_error_ == OnError::raise) throw;
      out.pixels.clear();
      stats_->skip(e.what());
    }
    stats_->decoded.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  const io::image::LoadOptions& options() const noexcept { return options_; }
  OnError on_error() const noexcept { return on_error_; }
  /// Bytes of one decoded image.
  std::size_t image_bytes() const noexcept { return options_.bytes(); }

  /// Files attempted so far, decoded or skipped.
  std::size_t attempted() const noexcept { return stats_->decoded.load(std::memory_order_relaxed); }
  /// Files skipped so far (`OnError::skip`).
  std::size_t skipped() const noexcept { return stats_->skipped.load(std::memory_order_relaxed); }
  /// The reasons of the first skipped files (at most 16), each naming its file.
  std::vector<std::string> skip_reasons() const {
    std::lock_guard lock(stats_->mu);
    return stats_->reasons;
  }

 private:
  struct Stats {
    std::atomic<std::size_t> decoded{0};
    std::atomic<std::size_t> skipped{0};
    std::mutex mu;
    std::vector<std::string> reasons;

    void skip(std::string reason) {
      skipped.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(mu);
      if (reasons.size() < 16) reasons.push_back(std::move(reason));
    }
  };

  io::image::LoadOptions options_;
  OnError on_error_ = OnError::raise;
  std::shared_ptr<Stats> stats_;
};

/// How `decode_images` runs: `threads` decoding workers (0: one per core), and the most bytes
/// of decoded images the stage may hold at once.
struct DecodeOptions {
  std::size_t threads = 1;
  std::size_t max_bytes_in_flight = std::size_t{64} << 20;
};

namespace detail {

struct NotSkipped {
  bool operator()(const LabeledImage& image) const noexcept { return !image.empty(); }
};

/// Threads and depth for `decode_images`, so that every decoded image the stage can hold fits
/// in `max_bytes_in_flight`: `depth` in queued or claimed slots, the consumer's, and one being
/// built by each of `threads` workers (before it replaces its slot's old one), so
/// `(depth + 1 + threads) * image_bytes <= max_bytes_in_flight`. Threads are cut to what the
/// bound allows (each needs a slot and its own image), depth is at most 2 per thread; a bound
/// under 3 images raises `memopt::error`.
inline AsyncConfig decode_plan(const DecodeOptions& o, std::size_t image_bytes) {
  const std::size_t fit = o.max_bytes_in_flight / std::max<std::size_t>(1, image_bytes);
  if (fit < 3) {
    throw error("data::decode_images: expected max_bytes_in_flight to hold at least 3 images of " +
                std::to_string(image_bytes) +
                " bytes (one decoding, one queued, the consumer's), "
                "found " +
                std::to_string(o.max_bytes_in_flight) + " bytes");
  }
  const std::size_t asked =
      o.threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : o.threads;
  const std::size_t threads = std::min(asked, (fit - 1) / 2);
  const std::size_t depth = std::min(2 * threads, fit - 1 - threads);
  return AsyncConfig{.threads = threads, .depth = depth};
}

struct decode_images_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, ImageDecoder decoder, DecodeOptions options = {}) const {
    using V = std::views::all_t<R>;
    static_assert(std::ranges::input_range<V>, "data::decode_images: expected an input range");
    static_assert(std::invocable<const ImageDecoder&, std::ranges::range_reference_t<V>>,
                  "data::decode_images: expected a range of data::ImageFile (a path and a label)");
    const AsyncConfig config = decode_plan(options, decoder.image_bytes());
    return std::views::filter(AsyncView<V, ImageDecoder>(std::views::all(std::forward<R>(range)),
                                                         std::move(decoder), config),
                              NotSkipped{});
  }

  auto operator()(ImageDecoder decoder, DecodeOptions options = {}) const {
    return bind_back(*this, std::move(decoder), options);
  }
};

}  // namespace detail

/// Decodes a range of `ImageFile`s (or anything with a path and a `label`, `image_file`) into
/// `LabeledImage`s with `decoder`, on `options.threads` worker threads, in upstream order
/// (`data::map`'s parallel engine, `detail::AsyncView`). Files skipped under
/// `OnError::skip` are left out; under `OnError::raise` the first bad file's error is
/// rethrown by the consumer's increment, at that file's place in the order.
///
/// Memory is bounded: with `n = max_bytes_in_flight / image_bytes` (at least 3), the stage
/// runs `threads = min(asked, (n - 1) / 2)` workers and keeps `depth = min(2 * threads, n - 1 -
/// threads)` images ahead of the consumer, so that all it can hold, `depth` slots, the
/// consumer's image and one being built per worker, is `(depth + 1 + threads) * image_bytes
/// <= max_bytes_in_flight` (`detail::decode_plan`). Beyond that each worker holds one source
/// file's bytes and its decoded (DCT-reduced, for JPEG) full image while it works, and keeps
/// the file buffer for its next file.
///
/// ```cpp
/// auto batches = dir | mo::data::shuffle(dir.size(), 1)
///                    | mo::data::decode_images(dir.decoder(), {.threads = 4})
///                    | mo::data::batch(32) | mo::data::prefetch(2);
/// ```
inline constexpr detail::decode_images_fn decode_images{};

}  // namespace memopt::data
