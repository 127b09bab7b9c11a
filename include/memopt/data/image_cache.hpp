#pragma once
// data::image_cache(path): decoded images written to a file on the first complete pass and
// memory-mapped on later ones (tf.data's cache(filename), for images).

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/io/detail/atomic_file.hpp"

namespace memopt::data {
namespace detail {

/// The trailer of an image cache file, after its fixed-size records (a little-endian int32
/// label, then height x width x channels bytes): written last, so a file cut short has none.
struct ImageCacheTrailer {
  char magic[8] = {'M', 'O', 'I', 'M', 'G', 'C', '1', '\0'};
  std::uint64_t count = 0;
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t channels = 0;
  std::uint32_t reserved = 0;

  std::size_t record_bytes() const noexcept {
    return sizeof(std::int32_t) + std::size_t{height} * width * channels;
  }
};
static_assert(sizeof(ImageCacheTrailer) == 32, "image_cache: the trailer is 32 bytes on disk");

/// A read-only memory map of a whole file, unmapped when destroyed.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, "open", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int code = errno;
      ::close(fd);
      fail(path, "stat", code);
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      const int code = errno;
      ::close(fd);
      if (p == MAP_FAILED) fail(path, "mmap", code);
      data_ = static_cast<const std::uint8_t*>(p);
      ::madvise(p, size_, MADV_SEQUENTIAL);
    } else {
      ::close(fd);
    }
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  }
  std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }

 private:
  [[noreturn]] static void fail(const std::filesystem::path& path, const char* step, int code) {
    throw error("data::image_cache: cannot " + std::string(step) + " " + path.string() + " (" +
                io::detail::errno_message(code) + ")");
  }
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail

/// The view `image_cache(path)` returns. When no cache file exists at `path`, the first
/// `begin()` reads all of `V` (image elements: `LabeledImage` from `decode_images`, decoded
/// on that stage's threads) into a temporary file, renamed to `path` once complete (so a
/// reader never sees half a cache; an error or exception leaves no file). Every pass then,
/// the first included and in later runs that find `path`, memory-maps the file and replays
/// its images without touching `V`: no reading, no decoding, and pages the kernel may drop
/// under memory pressure rather than resident copies.
///
/// Elements are `const ImageView&` into the map, valid as long as the view, so a `shuffle`
/// after the cache may keep them (shuffling views copies no pixels); the order cached is the
/// first pass's, so shuffle after the cache, not before. All images must share one shape. A
/// file at `path` that is not a complete cache raises `memopt::error` naming it (delete it to
/// rebuild).
///
/// ```cpp
/// auto cached = dir | dir.decode({.threads = 4}) | mo::data::image_cache("train.cache");
/// for (int epoch = 0; epoch < 10; ++epoch)
///   for (const auto& b : cached | mo::data::shuffle(dir.size(), epoch) | mo::data::batch(32))
///     step(b);
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class ImageCacheView : public std::ranges::view_interface<ImageCacheView<V>> {
 public:
  class Iterator;

  ImageCacheView(V base, std::filesystem::path path)
      : base_(std::move(base)), path_(std::move(path)) {}

  /// Starts a pass over the file, writing it first from `V` when there is none.
  Iterator begin() {
    if (!map_) open_existing();
    if (!map_) write_all();
    index_ = 0;
    done_ = false;
    load(0);
    return Iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// As many images as `V`, when it knows.
  auto size() const requires detail::ConstSized<V> { return std::ranges::size(base_); }

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void open_existing() {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) return;
    auto map = std::make_shared<const detail::MappedFile>(path_);
    const auto bytes = map->bytes();
    detail::ImageCacheTrailer t;
    const bool has_trailer = bytes.size() >= sizeof(t);
    if (has_trailer) std::memcpy(&t, bytes.data() + bytes.size() - sizeof(t), sizeof(t));
    const detail::ImageCacheTrailer want;
    if (!has_trailer || std::memcmp(t.magic, want.magic, sizeof(t.magic)) != 0 ||
        t.count * t.record_bytes() + sizeof(t) != bytes.size()) {
      throw error("data::image_cache: expected a complete memopt image cache at " + path_.string() +
                  ", found " + std::to_string(bytes.size()) +
                  " bytes without a valid trailer (delete it to rebuild the cache)");
    }
    trailer_ = t;
    map_ = std::move(map);
  }

  // From the map: record i, or the end.
  void load(std::size_t i) {
    if (i >= trailer_.count) {
      done_ = true;
      return;
    }
    const std::uint8_t* r = map_->bytes().data() + i * trailer_.record_bytes();
    std::int32_t label = 0;
    std::memcpy(&label, r, sizeof(label));
    element_ = ImageView{{r + sizeof(label), trailer_.record_bytes() - sizeof(label)},
                         label,
                         trailer_.height,
                         trailer_.width,
                         trailer_.channels};
  }

  void advance() { load(++index_); }

  // Reads all of `V` into the file, commits it and maps it.
  void write_all() {
    io::detail::AtomicFile writer(path_);
    detail::ImageCacheTrailer t;
    for (const auto& image : base_) {
      const std::span<const std::uint8_t> pixels(image.pixels);
      if (t.count == 0) {
        t.height = static_cast<std::uint32_t>(image.height);
        t.width = static_cast<std::uint32_t>(image.width);
        t.channels = static_cast<std::uint32_t>(image.channels);
      }
      if (image.height != t.height || image.width != t.width || image.channels != t.channels ||
          pixels.size() + sizeof(std::int32_t) != t.record_bytes()) {
        throw error("data::image_cache: expected every image to be " + std::to_string(t.height) +
                    " x " + std::to_string(t.width) + " x " + std::to_string(t.channels) +
                    ", found " + std::to_string(image.height) + " x " +
                    std::to_string(image.width) + " x " + std::to_string(image.channels) +
                    " at image " + std::to_string(t.count));
      }
      const std::int32_t label = static_cast<std::int32_t>(image.label);
      writer.write(std::as_bytes(std::span(&label, 1)));
      writer.write(std::as_bytes(pixels));
      ++t.count;
    }
    writer.write(std::as_bytes(std::span(&t, 1)));
    writer.commit();
    open_existing();
  }

  V base_;
  std::filesystem::path path_;
  std::shared_ptr<const detail::MappedFile> map_;
  detail::ImageCacheTrailer trailer_;
  ImageView element_;
  std::size_t index_ = 0;
  bool done_ = true;
};

/// The iterator of an `ImageCacheView`: a handle on the view's current image.
///
/// ```cpp
/// const mo::data::ImageView& first = *cached.begin();
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class ImageCacheView<V>::Iterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using value_type = ImageView;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  explicit Iterator(ImageCacheView* parent) noexcept : parent_(parent) {}

  const ImageView& operator*() const noexcept { return parent_->element_; }
  Iterator& operator++() {
    parent_->advance();
    return *this;
  }
  void operator++(int) { ++*this; }

  friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return it.done(); }

 private:
  bool done() const noexcept { return parent_->done_; }

  ImageCacheView* parent_ = nullptr;
};

namespace detail {

struct image_cache_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::filesystem::path path) const {
    using V = std::views::all_t<R>;
    static_assert(ImageElement<std::remove_cvref_t<std::ranges::range_reference_t<V>>>,
                  "data::image_cache: expected a range of images (data::LabeledImage, e.g. "
                  "from decode_images)");
    return ImageCacheView<V>(std::views::all(std::forward<R>(range)), std::move(path));
  }
  auto operator()(std::filesystem::path path) const { return bind_back(*this, std::move(path)); }
};

}  // namespace detail

/// Caches decoded images in the file `path`; see `ImageCacheView`.
///
/// ```cpp
/// auto epochs = files | dir.decode() | mo::data::image_cache("/tmp/train.cache");
/// ```
inline constexpr detail::image_cache_fn image_cache{};

}  // namespace memopt::data
