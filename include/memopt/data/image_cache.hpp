#pragma once
// data::image_cache(path, source): decoded images written to a file on the first complete
// pass and memory-mapped on later ones (tf.data's cache(filename), for images), refused when
// the file is not a complete cache of this format, is corrupt, or was made from other options
// or files.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/detail/file_kind.hpp"
#include "memopt/io/image/image.hpp"

namespace memopt::data {

namespace detail {

/// `io::image::LoadOptions` or alike: what makes an image's pixels.
template <class O>
concept pixel_options = requires(const O& o) {
  { o.height } -> std::convertible_to<int>;
  { o.width } -> std::convertible_to<int>;
  { o.color_mode } -> std::convertible_to<io::image::ColorMode>;
  { name_of(o.interpolation) } -> std::convertible_to<std::string_view>;
  { o.crop_to_aspect_ratio } -> std::convertible_to<bool>;
};

/// `ImageDecoder` or alike: `options()` gives its `pixel_options`.
template <class D>
concept pixel_options_source = requires(const D& d) {
  { d.options() } -> pixel_options;
};

/// `ImageDirectory` or alike: its decoder's options, and files with a name and a label.
template <class D>
concept listed_image_source = std::ranges::input_range<const D> && requires(const D& d) {
  { d.decoder() } -> pixel_options_source;
  { d.size() } -> std::convertible_to<std::size_t>;
  {std::string_view((*std::ranges::begin(d)).name)};
  {static_cast<std::int32_t>((*std::ranges::begin(d)).label)};
};

}  // namespace detail

/// What a cache's images are made from, stored in its file and compared on every later open:
/// the options that change pixels (size, colour mode, interpolation, crop) and, from an
/// `ImageDirectory`, which files it lists (their names and labels, in any order), so that a
/// cache made with other options, from another subset or another folder is refused instead
/// of replayed. `image_cache`'s second argument converts to it from an `ImageDirectory`, an
/// `ImageDecoder` or `io::image::LoadOptions` (options only), or is given the shape and a
/// description of images made some other way.
///
/// ```cpp
/// auto cached = dir | dir.decode() | mo::data::image_cache("train.cache", dir);
/// auto augmented = dir | dir.decode();  // and your own augmentation, mapped
/// auto mine = augmented | mo::data::image_cache("aug.cache", {64, 64, 3, "flip+crop v2"});
/// ```
struct ImageCacheSource {
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t channels = 0;
  /// The other options, as text: "rgb, bilinear", "grayscale, area, crop_to_aspect_ratio".
  std::string options;
  /// The source's files, 0 when it gives only options.
  std::uint64_t files = 0;
  /// The sum of one CRC32 per file (of its label and name): the same whatever their order,
  /// since a directory without a seed is shuffled anew every run.
  std::uint64_t files_hash = 0;

  /// For images made some other way: their shape, and text naming what else makes their
  /// pixels (under 48 characters), which a later run must repeat for the cache to replay.
  ImageCacheSource(std::uint32_t h, std::uint32_t w, std::uint32_t c, std::string text)
      : height(h), width(w), channels(c), options(std::move(text)) {}
  template <detail::pixel_options O>
  ImageCacheSource(const O& o)  // implicit: image_cache(path, load_options)
      : height(static_cast<std::uint32_t>(o.height)),
        width(static_cast<std::uint32_t>(o.width)),
        channels(static_cast<std::uint32_t>(io::image::channels_of(o.color_mode))) {
    // name_of(Interpolation) is found next to its type (resize.hpp), which the caller has.
    options = std::string(name_of(io::image::ColorMode(o.color_mode))) + ", " +
              std::string(name_of(o.interpolation));
    if (o.crop_to_aspect_ratio) options += ", crop_to_aspect_ratio";
  }
  template <detail::pixel_options_source D>
  ImageCacheSource(const D& decoder)  // implicit: image_cache(path, decoder)
      : ImageCacheSource(decoder.options()) {}
  template <detail::listed_image_source D>
  ImageCacheSource(const D& dir)  // implicit: image_cache(path, dir)
      : ImageCacheSource(dir.decoder().options()) {
    files = dir.size();
    for (const auto& f : dir) {
      const auto label = static_cast<std::uint32_t>(static_cast<std::int32_t>(f.label));
      const unsigned char le[4] = {
          static_cast<unsigned char>(label), static_cast<unsigned char>(label >> 8),
          static_cast<unsigned char>(label >> 16), static_cast<unsigned char>(label >> 24)};
      const std::string_view name(f.name);
      const uLong crc = ::crc32_z(0, le, sizeof(le));
      files_hash += ::crc32_z(crc, reinterpret_cast<const Bytef*>(name.data()), name.size());
    }
  }
};

namespace detail {

static_assert(std::endian::native == std::endian::little,
              "data::image_cache: the file's integers are stored in the host's order, which "
              "is assumed little-endian");

/// The trailer of an image cache file (format 2), after its fixed-size records (a CRC32 of
/// the record's index and contents, a little-endian int32 label, then height x width x
/// channels bytes): written last, so a file cut short has none. It records what the images
/// were made from (`ImageCacheSource`) and ends in its own CRC32. Format 1 had a 32-byte
/// trailer with neither, and records without a checksum.
struct ImageCacheTrailer {
  char magic[8] = {'M', 'O', 'I', 'M', 'G', 'C', '2', '\0'};  // "MOIMGC", format version
  std::uint64_t count = 0;                                    // records
  std::uint64_t files = 0;                                    // ImageCacheSource::files
  std::uint64_t files_hash = 0;                               // ImageCacheSource::files_hash
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t channels = 0;
  char options[48] = {};  // ImageCacheSource::options, '\0'-padded
  std::uint32_t crc = 0;  // CRC32 of the bytes above
};
static_assert(sizeof(ImageCacheTrailer) == 96, "image_cache: the trailer is 96 bytes on disk");

/// Bytes before a record's pixels: its CRC32 and its label.
inline constexpr std::size_t image_record_header = 8;

inline std::uint32_t trailer_crc(const ImageCacheTrailer& t) noexcept {
  return static_cast<std::uint32_t>(
      ::crc32_z(0, reinterpret_cast<const Bytef*>(&t), offsetof(ImageCacheTrailer, crc)));
}

/// The CRC32 a record stores: of its index (8 bytes), so that records swapped or repeated
/// are caught too, then of its label and pixels.
inline std::uint32_t record_crc(std::uint64_t index, const std::uint8_t* label_and_pixels,
                                std::size_t size) noexcept {
  const uLong crc = ::crc32_z(0, reinterpret_cast<const Bytef*>(&index), sizeof(index));
  return static_cast<std::uint32_t>(::crc32_z(crc, label_and_pixels, size));
}

/// An `ImageCacheTrailer` for `source`'s images.
inline ImageCacheTrailer trailer_for(const ImageCacheSource& source) {
  ImageCacheTrailer t;
  t.files = source.files;
  t.files_hash = source.files_hash;
  t.height = source.height;
  t.width = source.width;
  t.channels = source.channels;
  if (source.options.size() >= sizeof(t.options)) {
    throw error("data::image_cache: expected options shorter than " +
                std::to_string(sizeof(t.options)) + " characters, found \"" + source.options +
                "\"");
  }
  std::memcpy(t.options, source.options.data(), source.options.size());
  return t;
}

/// "12 x 16 rgb, bilinear": what `t`'s images were made with.
inline std::string describe(const ImageCacheTrailer& t) {
  const std::string_view options(t.options, sizeof(t.options));
  return std::to_string(t.height) + " x " + std::to_string(t.width) + " " +
         std::string(options.substr(0, options.find('\0')));
}

/// The `memopt::error` for a cache file that cannot be used: what was expected and found,
/// and what to do.
inline error cache_error(const std::filesystem::path& path, const std::string& what) {
  return error("data::image_cache: " + path.string() + ": " + what + "; delete " + path.string() +
               " to rebuild the cache");
}

/// A read-only memory map of a whole regular file, unmapped when destroyed.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) {
    // O_NONBLOCK: a FIFO at `path` would block open() until a writer came; fstat then refuses
    // anything but a regular file.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) fail(path, "open", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int code = errno;
      ::close(fd);
      fail(path, "stat", code);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw cache_error(
          path, std::string("expected a regular file, found ") + io::detail::kind_of(st.st_mode));
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
    throw cache_error(
        path, "cannot " + std::string(step) + " it (" + io::detail::errno_message(code) + ")");
  }
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Checks that `bytes` are a complete, intact format-2 cache of `source`'s images and returns
/// its trailer; raises `cache_error` saying what differs otherwise. Sizes are checked by
/// division, so that no product can wrap around; records are checked later, as they are read.
inline ImageCacheTrailer check_cache(const std::filesystem::path& path,
                                     std::span<const std::uint8_t> bytes,
                                     const ImageCacheSource& source) {
  ImageCacheTrailer t;
  constexpr std::size_t old_trailer = 32;  // format 1's
  const bool has_trailer = bytes.size() >= sizeof(t);
  if (has_trailer) std::memcpy(&t, bytes.data() + bytes.size() - sizeof(t), sizeof(t));
  const ImageCacheTrailer want = trailer_for(source);
  if (!has_trailer || std::memcmp(t.magic, want.magic, sizeof(t.magic)) != 0) {
    // Format 1 ended in a 32-byte trailer beginning "MOIMGC1".
    if (bytes.size() >= old_trailer &&
        std::memcmp(bytes.data() + bytes.size() - old_trailer, want.magic, 6) == 0) {
      const auto version = bytes[bytes.size() - old_trailer + 6];
      throw cache_error(
          path, "expected an image cache of format version 2, found one of version " +
                    (version >= '0' && version <= '9' ? std::string(1, static_cast<char>(version))
                                                      : std::string("unknown")) +
                    " (written by another memopt)");
    }
    throw cache_error(path, "expected a complete memopt image cache (records, then a " +
                                std::to_string(sizeof(t)) + "-byte trailer), found " +
                                std::to_string(bytes.size()) + " bytes that do not end in one");
  }
  if (trailer_crc(t) != t.crc) {
    throw cache_error(path, "the trailer fails its checksum (the file is corrupt)");
  }
  if (t.height == 0 || t.width == 0 || (t.channels != 1 && t.channels != 3)) {
    throw cache_error(path, "expected images of at least 1 x 1 with 1 or 3 channels, found " +
                                std::to_string(t.height) + " x " + std::to_string(t.width) + " x " +
                                std::to_string(t.channels));
  }
  // Both factors are below 2^32, so their product fits; each later step checks by division.
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t area = std::uint64_t{t.height} * t.width;
  const std::uint64_t body = bytes.size() - sizeof(t);
  const bool fits = area <= (max - image_record_header) / t.channels;
  const std::uint64_t record = fits ? area * t.channels + image_record_header : 0;
  if (!fits || body % record != 0 || body / record != t.count) {
    throw cache_error(path, "expected " + std::to_string(t.count) + " records of " +
                                (fits ? std::to_string(record) : std::string("over 2^64")) +
                                " bytes, found " + std::to_string(body) +
                                " bytes of records (the file is cut short or corrupt)");
  }
  if (t.height != want.height || t.width != want.width || t.channels != want.channels ||
      std::memcmp(t.options, want.options, sizeof(t.options)) != 0) {
    throw cache_error(path, "expected images of " + describe(want) +
                                ", found a cache made with other options (" + describe(t) + ")");
  }
  if (want.files != 0 && t.files != 0 &&
      (want.files != t.files || want.files_hash != t.files_hash)) {
    throw cache_error(path, "expected a cache of the " + std::to_string(want.files) +
                                " files listed, found one made from " + std::to_string(t.files) +
                                " other files (another folder, subset or class_names)");
  }
  return t;
}

/// What the copies of an `ImageCacheView` share: the file's map once opened or written, its
/// trailer, and how many of its records (from the first) have passed their checksum.
struct ImageCacheState {
  std::mutex mu;  // held while the file is opened or written
  std::shared_ptr<const MappedFile> map;
  ImageCacheTrailer trailer;
  std::size_t record_bytes = 0;
  std::atomic<std::size_t> verified{0};
};

}  // namespace detail

/// The view `image_cache(path, source)` returns. When no cache file exists at `path`, the
/// first `begin()` reads all of `V` (image elements: `LabeledImage` from `decode_images`,
/// decoded on that stage's threads) into a temporary file, renamed to `path` once complete (so
/// a reader never sees half a cache; an error or exception leaves no file). Every pass then,
/// the first included and in later runs that find `path`, memory-maps the file and replays
/// its images without touching `V`: no reading, no decoding, and pages the kernel may drop
/// under memory pressure rather than resident copies.
///
/// Elements are `const ImageView&` into the map, valid as long as the view, so a `shuffle`
/// after the cache may keep them (shuffling views copies no pixels); the order cached is the
/// first pass's, so shuffle after the cache, not before. Every image must have the shape
/// `source`'s options give.
///
/// The file records `source` (its options and, for an `ImageDirectory`, which files it
/// lists) and a CRC32 per image. A file at `path` that is not a complete cache of this format
/// (one of an older memopt included), whose sizes do not add up, that was made from other
/// options or files, or that is not a regular file raises `memopt::error` naming it and
/// saying what differs, before any image is replayed; an image whose checksum fails raises
/// when it is reached, the first time this view or a copy of it reads it. Later passes skip
/// the check, which would cost several times the pass's own copying (CRC32 runs at about 2 to
/// 3 GB/s): 2,000 images of 64 x 64 x 3 replayed in 2.4 ms, 13 ms on the first, checked pass.
/// Delete the file to rebuild it. The file must not be truncated while mapped (a reader would
/// get SIGBUS): memopt only ever replaces it whole, by rename.
///
/// ```cpp
/// auto cached = dir | dir.decode({.threads = 4}) | mo::data::image_cache("train.cache", dir);
/// for (int epoch = 0; epoch < 10; ++epoch)
///   for (const auto& b : cached | mo::data::shuffle(dir.size(), epoch) | mo::data::batch(32))
///     step(b);
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class ImageCacheView : public std::ranges::view_interface<ImageCacheView<V>> {
 public:
  class Iterator;

  ImageCacheView(V base, std::filesystem::path path, ImageCacheSource source)
      : base_(std::move(base)),
        path_(std::move(path)),
        source_(std::move(source)),
        state_(std::make_shared<detail::ImageCacheState>()) {}

  /// Starts a pass over the file, writing it first from `V` when there is none.
  Iterator begin() {
    {
      std::lock_guard lock(state_->mu);
      if (!state_->map) open_existing();
      if (!state_->map) write_all();
      map_ = state_->map;
      trailer_ = state_->trailer;
      record_bytes_ = state_->record_bytes;
    }
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
    const detail::ImageCacheTrailer t = detail::check_cache(path_, map->bytes(), source_);
    state_->trailer = t;
    // check_cache proved that this fits.
    state_->record_bytes =
        static_cast<std::size_t>(t.height) * t.width * t.channels + detail::image_record_header;
    state_->verified.store(0, std::memory_order_relaxed);
    state_->map = std::move(map);
  }

  // From the map: record i, or the end. Each record's checksum is checked the first time any
  // copy of this view reads it.
  void load(std::size_t i) {
    if (i >= trailer_.count) {
      done_ = true;
      return;
    }
    const std::uint8_t* r = map_->bytes().data() + i * record_bytes_;
    const std::uint8_t* body = r + sizeof(std::uint32_t);
    std::size_t verified = state_->verified.load(std::memory_order_acquire);
    if (i >= verified) {
      std::uint32_t stored = 0;
      std::memcpy(&stored, r, sizeof(stored));
      const std::uint32_t crc = detail::record_crc(i, body, record_bytes_ - sizeof(std::uint32_t));
      if (crc != stored) {
        throw detail::cache_error(path_, "image " + std::to_string(i) + " of " +
                                             std::to_string(trailer_.count) +
                                             " fails its checksum (the file is corrupt)");
      }
      // Passes read records in order, so one mark covers every record checked so far.
      while (verified < i + 1 &&
             !state_->verified.compare_exchange_weak(verified, i + 1, std::memory_order_release)) {
      }
    }
    std::int32_t label = 0;
    std::memcpy(&label, body, sizeof(label));
    element_ =
        ImageView{{r + detail::image_record_header, record_bytes_ - detail::image_record_header},
                  label,
                  trailer_.height,
                  trailer_.width,
                  trailer_.channels};
  }

  void advance() { load(++index_); }

  // Reads all of `V` into the file, commits it and maps it.
  void write_all() {
    io::detail::AtomicFile writer(path_);
    detail::ImageCacheTrailer t = detail::trailer_for(source_);
    const std::size_t pixels_per_image = std::size_t{t.height} * t.width * t.channels;
    std::vector<std::uint8_t> record(detail::image_record_header + pixels_per_image);
    for (const auto& image : base_) {
      const std::span<const std::uint8_t> pixels(image.pixels);
      if (image.height != t.height || image.width != t.width || image.channels != t.channels ||
          pixels.size() != pixels_per_image) {
        throw error("data::image_cache: expected every image to be " + std::to_string(t.height) +
                    " x " + std::to_string(t.width) + " x " + std::to_string(t.channels) +
                    " (the source's options), found " + std::to_string(image.height) + " x " +
                    std::to_string(image.width) + " x " + std::to_string(image.channels) +
                    " at image " + std::to_string(t.count));
      }
      const std::int32_t label = static_cast<std::int32_t>(image.label);
      std::memcpy(record.data() + sizeof(std::uint32_t), &label, sizeof(label));
      std::memcpy(record.data() + detail::image_record_header, pixels.data(), pixels.size());
      const std::uint32_t crc = detail::record_crc(t.count, record.data() + sizeof(std::uint32_t),
                                                   record.size() - sizeof(std::uint32_t));
      std::memcpy(record.data(), &crc, sizeof(crc));
      writer.write(std::as_bytes(std::span(record)));
      ++t.count;
    }
    t.crc = detail::trailer_crc(t);
    writer.write(std::as_bytes(std::span(&t, 1)));
    writer.commit();
    open_existing();
  }

  V base_;
  std::filesystem::path path_;
  ImageCacheSource source_;
  // Shared by copies (`cached | batch(32)` copies the view every epoch): the file is opened
  // and its records checked once for all of them.
  std::shared_ptr<detail::ImageCacheState> state_;
  // This pass's copies of the state's map, trailer and record size.
  std::shared_ptr<const detail::MappedFile> map_;
  detail::ImageCacheTrailer trailer_;
  std::size_t record_bytes_ = 0;
  ImageView element_;
  std::size_t index_ = 0;
  bool done_ = true;
};

/// The iterator of an `ImageCacheView`: a handle on the view's current image.
///
/// ```cpp
/// auto cached = dir | dir.decode() | mo::data::image_cache("train.cache", dir);
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
  auto operator()(R&& range, std::filesystem::path path, ImageCacheSource source) const {
    using V = std::views::all_t<R>;
    static_assert(ImageElement<std::remove_cvref_t<std::ranges::range_reference_t<V>>>,
                  "data::image_cache: expected a range of images (data::LabeledImage, e.g. "
                  "from decode_images)");
    return ImageCacheView<V>(std::views::all(std::forward<R>(range)), std::move(path),
                             std::move(source));
  }
  auto operator()(std::filesystem::path path, ImageCacheSource source) const {
    return bind_back(*this, std::move(path), std::move(source));
  }
  template <class Path>
  auto operator()(Path&&) const {
    static_assert(memopt::detail::dependent_false<Path>,
                  "data::image_cache: expected the images' source too, image_cache(path, dir): "
                  "the file records its options and files, and a later run with others is "
                  "refused instead of replaying the wrong images");
  }
};

}  // namespace detail

/// Caches decoded images in the file `path`, made from `source` (an `ImageDirectory`, an
/// `ImageDecoder` or `io::image::LoadOptions`: see `ImageCacheSource`); see `ImageCacheView`.
///
/// ```cpp
/// auto epochs = dir | dir.decode() | mo::data::image_cache("/tmp/train.cache", dir);
/// ```
inline constexpr detail::image_cache_fn image_cache{};

}  // namespace memopt::data
