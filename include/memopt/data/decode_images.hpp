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

/// Decodes an element with a path and a label (an `ImageFile`) into a `LabeledImage` of
/// fixed shape (`io::image::load_into`). It is a const, thread-safe callable: workers share
/// one. Copies share the count of skipped files and the first few reasons.
///
/// ```cpp
/// mo::data::ImageDecoder decode({.height = 64, .width = 64}, mo::data::OnError::skip);
/// mo::data::LabeledImage img = decode(mo::data::ImageFile{"cat.png", 3});
/// ```
class ImageDecoder {
 public:
  ImageDecoder() : ImageDecoder(io::image::LoadOptions{}) {}
  explicit ImageDecoder(io::image::LoadOptions options, OnError on_error = OnError::raise)
      : options_(options), on_error_(on_error), stats_(std::make_shared<Stats>()) {}

  template <class File>
  requires requires(const File& f) {
    f.path;
    f.label;
  }
  LabeledImage operator()(const File& file) const {
    LabeledImage out;
    out.label = static_cast<std::int32_t>(file.label);
    out.height = static_cast<std::uint32_t>(options_.height);
    out.width = static_cast<std::uint32_t>(options_.width);
    out.channels = static_cast<std::uint32_t>(io::image::channels_of(options_.color_mode));
    out.pixels.resize(options_.bytes());
    try {
      io::image::load_into(file.path, options_, out.pixels);
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

/// Images the stage may hold ahead of the consumer's, so that they and the consumer's own
/// fit in `max_bytes_in_flight`: depth + 1 images in all. At most 2 per thread (more would
/// only hold memory), at least 1; a bound under 2 images raises `memopt::error`.
inline std::size_t decode_depth(const DecodeOptions& o, std::size_t threads,
                                std::size_t image_bytes) {
  const std::size_t fit = o.max_bytes_in_flight / std::max<std::size_t>(1, image_bytes);
  if (fit < 2) {
    throw error("data::decode_images: expected max_bytes_in_flight to hold at least 2 images of " +
                std::to_string(image_bytes) + " bytes, found " +
                std::to_string(o.max_bytes_in_flight) + " bytes");
  }
  return std::min(fit - 1, 2 * threads);
}

struct decode_images_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, ImageDecoder decoder, DecodeOptions options = {}) const {
    using V = std::views::all_t<R>;
    static_assert(std::ranges::input_range<V>, "data::decode_images: expected an input range");
    static_assert(std::invocable<const ImageDecoder&, std::ranges::range_reference_t<V>>,
                  "data::decode_images: expected a range of data::ImageFile (a path and a label)");
    const std::size_t threads =
        options.threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : options.threads;
    const std::size_t depth = decode_depth(options, threads, decoder.image_bytes());
    // A worker needs a free slot to start an image, so more workers than slots would idle.
    AsyncConfig config{.threads = std::min(threads, depth), .depth = depth};
    return std::views::filter(AsyncView<V, ImageDecoder>(std::views::all(std::forward<R>(range)),
                                                         std::move(decoder), config),
                              NotSkipped{});
  }

  auto operator()(ImageDecoder decoder, DecodeOptions options = {}) const {
    return bind_back(*this, std::move(decoder), options);
  }
};

}  // namespace detail

/// Decodes a range of `ImageFile`s (or anything with `path` and `label`) into
/// `LabeledImage`s with `decoder`, on `options.threads` worker threads, in upstream order
/// (`data::map`'s parallel engine, `detail::AsyncView`). Files skipped under
/// `OnError::skip` are left out; under `OnError::raise` the first bad file's error is
/// rethrown by the consumer's increment, at that file's place in the order.
///
/// Memory is bounded: the stage holds at most `depth + 1` decoded images (queued, being
/// decoded, and the consumer's), with `depth = min(2 * threads, max_bytes_in_flight /
/// image_bytes - 1)`, so `(depth + 1) * image_bytes <= max_bytes_in_flight`. Beyond that each
/// worker holds one source file's bytes and its decoded (DCT-reduced, for JPEG) image while
/// it works, buffers it keeps for its next file.
///
/// ```cpp
/// auto batches = dir | mo::data::shuffle(dir.size(), 1)
///                    | mo::data::decode_images(dir.decoder(), {.threads = 4})
///                    | mo::data::batch(32) | mo::data::prefetch(2);
/// ```
inline constexpr detail::decode_images_fn decode_images{};

}  // namespace memopt::data
