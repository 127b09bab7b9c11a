#pragma once
// data::image_directory(dir, options): Keras's image_dataset_from_directory, listed once,
// decoded lazily (decode_images.hpp).

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/decode_images.hpp"
#include "memopt/io/detail/file_kind.hpp"
#include "memopt/io/image/image.hpp"
#include "memopt/io/image/load.hpp"
#include "memopt/io/image/resize.hpp"
#include "memopt/model/input.hpp"

namespace memopt::data {

using io::image::ColorMode;
using io::image::Interpolation;

/// Which part of a split `image_directory` returns, as Keras's `subset`; `both` is
/// `image_directory_split`'s.
enum class Subset : std::uint8_t { all, training, validation, both };

/// The options of `image_directory`, with Keras's names and defaults, in the order of
/// `image_dataset_from_directory`'s arguments (designated initializers must follow it); the
/// fields Keras lacks come last.
///
/// ```cpp
/// auto train = mo::data::image_directory("photos", {.image_size = {128, 128},
///                                                   .seed = 1337,
///                                                   .validation_split = 0.2,
///                                                   .subset = mo::data::Subset::training});
/// ```
struct ImageDirectoryOptions {
  /// Keras's `class_names`: when given, only these subfolders, labelled in this order (each
  /// must exist); otherwise every subfolder, sorted.
  std::vector<std::string> class_names = {};
  ColorMode color_mode = ColorMode::rgb;
  /// {height, width} every image is resized to.
  std::array<int, 2> image_size = {256, 256};
  /// Shuffle the file list once, with `seed`, before splitting (Keras's order for a seed).
  bool shuffle = true;
  /// The shuffle's seed (< 2^32, numpy's RandomState); without one, a random seed, which a
  /// split refuses (training and validation would overlap across runs).
  std::optional<std::uint64_t> seed = std::nullopt;
  /// The fraction (0, 1) held out for validation; 0 keeps everything.
  double validation_split = 0;
  Subset subset = Subset::all;
  Interpolation interpolation = Interpolation::bilinear;
  /// Descend into folders that are symbolic links (Keras's `follow_links`); a folder reached
  /// through several links (or a link to an ancestor) is listed once.
  bool follow_links = false;
  /// Resize the largest centred crop of the target's aspect ratio instead of the whole image.
  bool crop_to_aspect_ratio = false;
  // memopt's own, after Keras's arguments:
  /// Whether a file that cannot be decoded raises `memopt::error` or is skipped and counted;
  /// also whether an entry named like an image that is not a regular file (a FIFO) raises at
  /// listing or is left out.
  OnError on_error = OnError::raise;
  /// The most pixels an image file may claim in its header (height x width, at full size):
  /// above it the file is refused before it is decoded, as `on_error` says, so that a tiny file
  /// claiming a huge image costs no memory. Pillow's limit by default
  /// (`io::image::default_max_pixels`, 89,478,485 pixels).
  std::uint64_t max_pixels = io::image::default_max_pixels;
};

/// One listed file: its folder, its name in that folder, and its class index. `folder` and
/// `name` view the listing of the `ImageDirectory` that yielded it, so the file is valid while
/// that directory, or a copy of it, lives; `path()` builds the full path when it is needed.
///
/// ```cpp
/// const mo::data::ImageFile f{"photos/cats", "001.jpg", 1};
/// assert(f.path() == "photos/cats/001.jpg");
/// ```
struct ImageFile {
  std::string_view folder = {};
  std::string_view name = {};
  std::int32_t label = 0;

  /// `folder/name`, as `std::filesystem::path`'s `/` joins them on POSIX.
  std::string path() const {
    std::string out;
    out.reserve(folder.size() + 1 + name.size());
    out += folder;
    if (!out.empty() && out.back() != '/') out += '/';
    out += name;
    return out;
  }
};

namespace detail {

/// What an `ImageDirectory` lists, shared by its copies and subsets and never changed after
/// listing. A path is stored once per folder, so that a file costs its name (relative to its
/// folder, NUL-terminated, in one buffer) and an 8-byte `ListedFile`, instead of a full path
/// string with its own heap block: the listing grows with the dataset, so it must be small.
struct ImageListing {
  std::vector<std::string> folders;  // each folder holding listed files, as listed
  std::vector<std::int32_t> labels;  // the class of each folder's files
  std::vector<char> names;           // file names, each followed by '\0'

  /// Heap and object bytes held, for `ImageDirectory::listing_bytes`.
  std::size_t bytes() const noexcept {
    std::size_t n = sizeof(*this) + folders.capacity() * sizeof(std::string) +
                    labels.capacity() * sizeof(std::int32_t) + names.capacity();
    // A string longer than its inline buffer has a heap block of capacity + 1 bytes.
    for (const std::string& f : folders) {
      if (f.capacity() > std::string().capacity()) n += f.capacity() + 1;
    }
    return n;
  }
};

/// One file of an `ImageDirectory`: where its name starts in `ImageListing::names`, and its
/// folder's index (which also gives its label). 32 bits each: a listing refuses more than 4 GiB
/// of names or 2^32 folders.
struct ListedFile {
  std::uint32_t name = 0;
  std::uint32_t folder = 0;
};
static_assert(sizeof(ListedFile) == 8, "a listed file should cost 8 bytes beside its name");

inline ImageFile file_at(const ImageListing& listing, ListedFile f) noexcept {
  return ImageFile{listing.folders[f.folder], std::string_view(listing.names.data() + f.name),
                   listing.labels[f.folder]};
}

/// numpy's legacy `RandomState(seed).shuffle(x)`: Fisher-Yates from the back, each index drawn
/// by `random_interval` (a 32-bit MT19937 output masked to the next power of two, redrawn
/// while too large). `std::mt19937` is numpy's MT19937 with its legacy integer seeding, so a
/// seed gives Keras's order bit for bit.
template <class T>
void numpy_shuffle(std::vector<T>& items, std::uint32_t seed) {
  std::mt19937 mt(seed);
  for (std::size_t i = items.size(); i-- > 1;) {
    std::uint64_t mask = i;
    for (int s = 1; s <= 32; s *= 2) mask |= mask >> s;
    std::uint64_t j = 0;
    do {
      j = static_cast<std::uint64_t>(mt()) & mask;
    } while (j > i);
    std::swap(items[i], items[static_cast<std::size_t>(j)]);
  }
}

inline bool has_image_extension(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view ext : {".bmp", ".jpeg", ".jpg", ".png"}) {
    if (lower.size() >= ext.size() &&
        lower.compare(lower.size() - ext.size(), ext.size(), ext) == 0)
      return true;
  }
  return false;
}

/// What listing passed over, to say why when it finds no image at all.
struct ListingCounts {
  std::size_t other_files = 0;             // regular files without an image extension
  std::set<std::string> other_extensions;  // a few of their extensions (at most 6 kept)
  std::size_t not_regular = 0;             // named like images, not regular files (skip)
  std::size_t links_not_followed = 0;      // links to folders, without follow_links

  void other_file(std::string_view name) {
    ++other_files;
    const auto dot = name.rfind('.');
    std::string ext = dot == std::string_view::npos || dot == 0 ? std::string("no extension")
                                                                : std::string(name.substr(dot));
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (other_extensions.size() < 6) other_extensions.insert(std::move(ext));
  }
};

// Keras's iter_valid_files: every folder under `root` (os.walk order, sorted by its path),
// and in each its image files sorted by name, appended to `listing` and `out` with `label`.
//
// Unlike os.walk, each folder is listed once, however many paths lead to it: folders are
// remembered by (device, inode), so that two links to one folder, or a link to an ancestor,
// cannot list files twice or never end. Which path lists a folder depends on the tree alone,
// not on the order the system returns entries in: the folders reached without a link come
// first (their paths are the real ones), then those behind links, in sorted order of their
// paths. Only regular files (or links to them) are listed: a FIFO named x.jpg would block its
// reader forever, so it raises `memopt::error` under `OnError::raise` and is left out (counted
// in `counts`) under `OnError::skip`.
inline void list_class(const std::filesystem::path& root, std::int32_t label,
                       const ImageDirectoryOptions& o, ImageListing& listing,
                       std::vector<ListedFile>& out, ListingCounts& counts) {
  struct Folder {
    std::string key;  // the path below the class folder, "" for itself: the sort key
    std::filesystem::path path;
    std::vector<std::string> files;
  };
  std::vector<Folder> folders;
  // Folders to list, by (reached through a link, key): popped in that order, and a folder's
  // subfolders sort after it, so the order is fixed by the tree.
  std::map<std::pair<bool, std::string>, std::filesystem::path> pending;
  pending.emplace(std::pair{false, std::string()}, root);
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;  // (device, inode) of listed folders
  while (!pending.empty()) {
    auto node = pending.extract(pending.begin());
    const bool via_link = node.key().first;
    Folder folder{std::move(node.key().second), std::move(node.mapped()), {}};
    struct stat st {};
    if (::stat(folder.path.c_str(), &st) != 0) {
      throw error("data::image_directory: cannot list " + folder.path.string() + " (" +
                  std::error_code(errno, std::generic_category()).message() + ")");
    }
    if (!seen.emplace(static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino))
             .second) {
      continue;  // already listed through another path
    }
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder.path, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      // These use the type readdir gave, without a stat, except for links.
      std::error_code type_ec;
      if (it->is_directory(type_ec)) {
        // os.walk lists a link to a folder among the folders, and descends only when
        // following links.
        const bool link = it->is_symlink(type_ec);
        if (link && !o.follow_links) {
          ++counts.links_not_followed;
        } else {
          pending.emplace(std::pair{via_link || link, folder.key + "/" + name}, it->path());
        }
      } else if (it->is_regular_file(type_ec)) {
        if (has_image_extension(name)) {
          folder.files.push_back(name);
        } else {
          counts.other_file(name);
        }
      } else if (has_image_extension(name)) {
        if (o.on_error == OnError::raise) {
          struct stat entry {};
          const std::string kind =
              ::stat(it->path().c_str(), &entry) == 0
                  ? std::string(io::detail::kind_of(entry.st_mode))
                  : "an entry that cannot be read (" +
                        std::error_code(errno, std::generic_category()).message() + ")";
          throw error("data::image_directory: " + it->path().string() +
                      ": expected a regular file, found " + kind +
                      " (OnError::skip leaves such entries out)");
        }
        ++counts.not_regular;
      }
    }
    if (ec) {
      throw error("data::image_directory: cannot list " + folder.path.string() + " (" +
                  ec.message() + ")");
    }
    folders.push_back(std::move(folder));
  }
  // Python sorts str by code point, which for UTF-8 is byte order, as std::string's compare.
  std::stable_sort(folders.begin(), folders.end(),
                   [](const Folder& a, const Folder& b) { return a.key < b.key; });
  for (Folder& folder : folders) {
    if (folder.files.empty()) continue;
    if (listing.folders.size() > 0xFFFFFFFFu) {
      throw error("data::image_directory: expected at most 2^32 folders of images under " +
                  root.string() + ", found more");
    }
    const auto index = static_cast<std::uint32_t>(listing.folders.size());
    listing.folders.push_back(folder.path.string());
    listing.labels.push_back(label);
    std::sort(folder.files.begin(), folder.files.end());
    for (const std::string& name : folder.files) {
      if (listing.names.size() + name.size() >= 0xFFFFFFFFu) {
        throw error("data::image_directory: expected at most 4 GiB of file names under " +
                    root.string() + ", found more");
      }
      out.push_back(ListedFile{static_cast<std::uint32_t>(listing.names.size()), index});
      listing.names.insert(listing.names.end(), name.begin(), name.end());
      listing.names.push_back('\0');
    }
  }
}

/// "n thing" or "n things".
inline std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

/// The error when the class folders of `root` hold no image: what was looked for, and what
/// was found instead (Keras: "No images found in directory ... Allowed formats: ...").
[[noreturn]] inline void no_images(const std::filesystem::path& root,
                                   const std::vector<std::string>& classes,
                                   const ListingCounts& counts) {
  std::string names;
  for (std::size_t i = 0; i < classes.size() && i < 10; ++i) {
    names += (i == 0 ? "" : ", ") + classes[i];
  }
  if (classes.size() > 10) names += ", ... (" + std::to_string(classes.size()) + " in all)";
  std::string found;
  auto add = [&found](const std::string& part) { found += (found.empty() ? "" : ", ") + part; };
  if (counts.other_files > 0) {
    std::string exts;
    std::size_t shown = 0;
    for (const std::string& e : counts.other_extensions) {
      if (shown++ == 5) {
        exts += ", ...";
        break;
      }
      exts += (exts.empty() ? "" : ", ") + e;
    }
    add(count_of(counts.other_files, "file of another type", "files of other types") + " (" + exts +
        ")");
  }
  if (counts.not_regular > 0) {
    add(count_of(counts.not_regular, "entry", "entries") +
        " named like an image but not a regular file, left out (OnError::skip)");
  }
  if (counts.links_not_followed > 0) {
    add(count_of(counts.links_not_followed, "link to a folder", "links to folders") +
        ", not followed (follow_links = false)");
  }
  throw error(
      "data::image_directory: expected image files (.bmp, .jpeg, .jpg, .png, in any "
      "case) in the class folders of " +
      root.string() + " (" + names + "), found " +
      (found.empty() ? std::string("no files") : "none: " + found));
}

}  // namespace detail

/// The images of a folder with one subfolder per class: `image_directory`'s result. It is a
/// sized, random-access range of `ImageFile` values (folder, name and label, viewing the
/// listing), listed once when it is made; nothing is decoded until a pipeline pulls images
/// through `decode()`, which yields `LabeledImage`s that `batch(n)` groups into `ImageBatch`es.
/// The listing keeps each folder's path once and each file's name in one shared buffer, about
/// 8 bytes plus the name's length per file (`listing_bytes()`); copies and `take(n)` share it.
///
/// ```cpp
/// auto train = mo::data::image_directory("photos", {.image_size = {128, 128}});
/// fmt::print("{} files in {} classes\n", train.size(), train.class_names().size());
/// for (const mo::data::ImageBatch& b : train | mo::data::shuffle(train.size(), 1)
///                                      | train.decode({.threads = 4}) | mo::data::batch(32))
///   step(b);
/// ```
class ImageDirectory {
 public:
  /// Yields `ImageFile`s by value, built from the listing: random access, as a vector's.
  class iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    // Its `operator*` returns a value, which C++17's forward iterators may not.
    using iterator_category = std::input_iterator_tag;
    using value_type = ImageFile;
    using difference_type = std::ptrdiff_t;

    iterator() = default;
    ImageFile operator*() const noexcept { return detail::file_at(*listing_, *at_); }
    ImageFile operator[](difference_type n) const noexcept {
      return detail::file_at(*listing_, at_[n]);
    }
    iterator& operator++() noexcept {
      ++at_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++at_;
      return old;
    }
    iterator& operator--() noexcept {
      --at_;
      return *this;
    }
    iterator operator--(int) noexcept {
      iterator old = *this;
      --at_;
      return old;
    }
    iterator& operator+=(difference_type n) noexcept {
      at_ += n;
      return *this;
    }
    iterator& operator-=(difference_type n) noexcept {
      at_ -= n;
      return *this;
    }
    friend iterator operator+(iterator it, difference_type n) noexcept { return it += n; }
    friend iterator operator+(difference_type n, iterator it) noexcept { return it += n; }
    friend iterator operator-(iterator it, difference_type n) noexcept { return it -= n; }
    friend difference_type operator-(const iterator& a, const iterator& b) noexcept {
      return a.at_ - b.at_;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }
    friend auto operator<=>(const iterator& a, const iterator& b) noexcept {
      return a.at_ <=> b.at_;
    }

   private:
    friend class ImageDirectory;
    // Pointers into heap blocks, not into the directory: like a vector's iterators, they stay
    // valid when the directory is moved.
    iterator(const detail::ImageListing* listing, const detail::ListedFile* at) noexcept
        : listing_(listing), at_(at) {}
    const detail::ImageListing* listing_ = nullptr;
    const detail::ListedFile* at_ = nullptr;
  };

  ImageDirectory() = default;
  /// The files `files` of `listing`, in that order (`image_directory` makes these).
  ImageDirectory(std::vector<std::string> class_names,
                 std::shared_ptr<const detail::ImageListing> listing,
                 std::vector<detail::ListedFile> files, ImageDirectoryOptions options)
      : class_names_(std::move(class_names)),
        listing_(std::move(listing)),
        files_(std::move(files)),
        options_(options),
        decoder_(load_options(options), options.on_error) {}

  /// Class names in label order: the subfolders, sorted.
  const std::vector<std::string>& class_names() const noexcept { return class_names_; }
  const ImageDirectoryOptions& options() const noexcept { return options_; }

  std::size_t size() const noexcept { return files_.size(); }
  bool empty() const noexcept { return files_.empty(); }
  ImageFile operator[](std::size_t i) const noexcept {
    return detail::file_at(*listing_, files_[i]);
  }
  iterator begin() const noexcept { return iterator(listing_.get(), files_.data()); }
  iterator end() const noexcept { return iterator(listing_.get(), files_.data() + files_.size()); }

  /// The first `n` files (all of them if there are fewer), sharing this listing.
  ImageDirectory take(std::size_t n) const {
    const auto first = files_.begin() + static_cast<std::ptrdiff_t>(std::min(n, files_.size()));
    return ImageDirectory(class_names_, listing_, {files_.begin(), first}, options_);
  }

  /// Bytes this directory's files cost: its 8-byte records plus the listing it shares (every
  /// listed folder's path and file's name, also those of the other subset of a split).
  std::size_t listing_bytes() const noexcept {
    return files_.capacity() * sizeof(detail::ListedFile) + (listing_ ? listing_->bytes() : 0);
  }

  /// The decoder for these options (size, colour mode, interpolation, crop, on_error,
  /// max_pixels); its copies share one count of skipped files.
  const ImageDecoder& decoder() const noexcept { return decoder_; }

  /// A pipeline stage that decodes `ImageFile`s with this directory's decoder on worker
  /// threads: `decode_images(decoder(), options)`.
  auto decode(DecodeOptions options = {}) const { return decode_images(decoder_, options); }

  /// Files skipped so far under `OnError::skip`, by any pipeline using this decoder.
  std::size_t skipped() const noexcept { return decoder_.skipped(); }

  /// The options the decoder loads with.
  static io::image::LoadOptions load_options(const ImageDirectoryOptions& o) {
    return io::image::LoadOptions{.height = o.image_size[0],
                                  .width = o.image_size[1],
                                  .color_mode = o.color_mode,
                                  .interpolation = o.interpolation,
                                  .crop_to_aspect_ratio = o.crop_to_aspect_ratio,
                                  .max_pixels = o.max_pixels};
  }

 private:
  std::vector<std::string> class_names_;
  std::shared_ptr<const detail::ImageListing> listing_;
  std::vector<detail::ListedFile> files_;
  ImageDirectoryOptions options_;
  ImageDecoder decoder_;
};

/// `image_directory_split`'s pair, for structured bindings.
struct ImageDirectorySplit {
  ImageDirectory training;
  ImageDirectory validation;
};

namespace detail {

inline void check_options(const ImageDirectoryOptions& o) {
  if (o.image_size[0] <= 0 || o.image_size[1] <= 0) {
    throw error("data::image_directory: expected a positive image_size, found " +
                std::to_string(o.image_size[0]) + " x " + std::to_string(o.image_size[1]));
  }
  if (o.validation_split != 0 && !(o.validation_split > 0 && o.validation_split < 1)) {
    throw error("data::image_directory: expected validation_split in (0, 1), found " +
                std::to_string(o.validation_split));
  }
  const bool split = o.validation_split != 0;
  if (split != (o.subset != Subset::all)) {
    throw error(std::string("data::image_directory: expected validation_split and subset to be "
                            "set together, found ") +
                (split ? "a validation_split without a subset" : "a subset without a split"));
  }
  if (split && o.shuffle && !o.seed) {
    throw error(
        "data::image_directory: expected a seed with validation_split and shuffle (else "
        "training and validation files would overlap), found none");
  }
  if (o.seed && *o.seed > 0xFFFFFFFFull) {
    throw error("data::image_directory: expected a seed below 2^32 (numpy's RandomState), found " +
                std::to_string(*o.seed));
  }
}

// What index_directory found: the classes, the listing, and its files in Keras's order.
struct Index {
  std::vector<std::string> classes;
  std::shared_ptr<const ImageListing> listing;
  std::vector<ListedFile> files;

  // Files [first, last) as an exact-size vector: a subset holds no spare capacity.
  std::vector<ListedFile> slice(std::size_t first, std::size_t last) const {
    return {files.begin() + static_cast<std::ptrdiff_t>(first),
            files.begin() + static_cast<std::ptrdiff_t>(last)};
  }
};

// Lists, labels and shuffles every file: Keras's index_directory.
inline Index index_directory(const std::filesystem::path& root, const ImageDirectoryOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    throw error("data::image_directory: expected a folder of class folders at " + root.string() +
                ", found " + (std::filesystem::exists(root, ec) ? "a file" : "nothing"));
  }
  std::vector<std::string> classes;
  std::size_t loose_images = 0;  // image files beside the class folders, for the message
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code dir_ec;
    if (!name.starts_with(".") && it->is_directory(dir_ec)) classes.push_back(name);
    if (!it->is_directory(dir_ec) && has_image_extension(name)) ++loose_images;
  }
  if (ec)
    throw error("data::image_directory: cannot list " + root.string() + " (" + ec.message() + ")");
  std::sort(classes.begin(), classes.end());
  if (!o.class_names.empty()) {
    for (const std::string& name : o.class_names) {
      if (!std::binary_search(classes.begin(), classes.end(), name)) {
        std::string found;
        for (const std::string& c : classes) found += (found.empty() ? "" : ", ") + c;
        throw error("data::image_directory: expected class_names among the subfolders of " +
                    root.string() + " (" + found + "), found \"" + name + "\"");
      }
    }
    classes = o.class_names;
  }
  if (classes.empty()) {
    throw error("data::image_directory: expected one subfolder per class in " + root.string() +
                ", found none" +
                (loose_images == 0
                     ? std::string()
                     : " and " + count_of(loose_images, "image", "images") +
                           " directly in it (each class's images go in a subfolder named after "
                           "the class)"));
  }
  auto listing = std::make_shared<ImageListing>();
  std::vector<ListedFile> files;
  ListingCounts counts;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    list_class(root / classes[c], static_cast<std::int32_t>(c), o, *listing, files, counts);
  }
  // Keras raises here too; an empty listing would fail only at fit, naming no folder.
  if (files.empty()) no_images(root, classes, counts);
  // Growth by doubling leaves up to half of each buffer unused; the listing lives all along.
  listing->names.shrink_to_fit();
  listing->folders.shrink_to_fit();
  listing->labels.shrink_to_fit();
  files.shrink_to_fit();
  if (o.shuffle) {
    std::uint32_t seed = 0;
    if (o.seed) {
      seed = static_cast<std::uint32_t>(*o.seed);
    } else {
      seed = std::random_device{}() % 1000000u;  // Keras draws np.random.randint(1e6)
    }
    numpy_shuffle(files, seed);
  }
  return Index{std::move(classes), std::move(listing), std::move(files)};
}

// Keras's get_training_or_validation_split: the last int(split * n) files are validation.
// (Keras's own slicing gives training no files when that count is 0; here training then keeps
// them all.)
inline std::size_t validation_count(double split, std::size_t n) {
  return static_cast<std::size_t>(std::floor(split * static_cast<double>(n)));
}

}  // namespace detail

/// Lists the images under `dir` as Keras's `image_dataset_from_directory` does and returns
/// them as an `ImageDirectory` (the subset `options.subset` asks for):
///
/// - Classes are the subfolders of `dir` not starting with ".", sorted by name (byte order),
///   or `options.class_names` in their order; labels are their indices (`class_names()`).
/// - In each class folder, every folder below it is walked (links to folders only with
///   `follow_links`), folders in the order of their paths, files in each sorted by name;
///   regular files (or links to them) whose name ends in .jpg, .jpeg, .png or .bmp (any case)
///   are listed. (Keras also lists .gif, which memopt does not decode.) What a file holds, not
///   its name, decides how it decodes (`io::image::detect_format`).
/// - Keras lists by name alone; here an entry named like an image that is not a regular file
///   (a FIFO, whose reader would wait forever, a socket, a device, a link to nothing) raises
///   `memopt::error` naming it, or is left out under `OnError::skip`. A file swapped for one
///   after listing is refused when opened, without blocking, like any unreadable file.
/// - With `follow_links`, each folder of a class is listed once however many paths lead to it
///   (remembered by device and inode): os.walk, which Keras uses, lists a folder once per link
///   to it and never ends on two links to an ancestor. A folder keeps its path without links
///   if it has one, else the first path to it in sorted order.
/// - With `shuffle`, the whole list is shuffled once with numpy's `RandomState(seed)`, as
///   Keras does: the same seed gives the same order and the same split as Keras, bit for bit.
/// - With `validation_split` s, the last `floor(s * n)` files are the validation subset, the
///   others the training subset.
///
/// Keras also reshuffles every epoch (`shuffle(buffer_size = 8 * batch_size)`); here that is
/// the pipeline's choice: `files | shuffle(files.size(), seed)` shuffles names, cheaply,
/// before any decoding. That buffer holds a copy of every `ImageFile` (40 bytes each, viewing
/// the listing); for hundreds of thousands of files, shuffle their indices instead (4 bytes
/// each) and look the files up after, as `examples/03_image_folder` does:
/// `std::views::iota(std::uint32_t{0}, n) | shuffle(n, seed) |
/// std::views::transform([&files](std::uint32_t i) { return files[i]; })`. Bad options, a
/// missing folder, one without class folders, or class folders without a single image raise
/// `memopt::error` saying what was found instead (as Keras's "No images found"); files are not
/// opened until decoded.
///
/// ```cpp
/// auto val = mo::data::image_directory("photos", {.seed = 1337,
///                                                 .validation_split = 0.2,
///                                                 .subset = mo::data::Subset::validation});
/// ```
inline ImageDirectory image_directory(const std::filesystem::path& dir,
                                      ImageDirectoryOptions options = {}) {
  detail::check_options(options);
  if (options.subset == Subset::both) {
    throw error(
        "data::image_directory: expected subset training or validation, found both; use "
        "data::image_directory_split for both");
  }
  detail::Index index = detail::index_directory(dir, options);
  std::vector<detail::ListedFile> files;
  const std::size_t n = index.files.size();
  const std::size_t cut = n - detail::validation_count(options.validation_split, n);
  if (options.subset == Subset::training) {
    files = index.slice(0, cut);
  } else if (options.subset == Subset::validation) {
    files = index.slice(cut, n);
  } else {
    files = std::move(index.files);
  }
  return ImageDirectory(std::move(index.classes), std::move(index.listing), std::move(files),
                        options);
}

/// Keras's `subset="both"`: the training and the validation subsets of one listing.
///
/// ```cpp
/// auto [train, val] = mo::data::image_directory_split("photos", {.seed = 1337,
///                                                                .validation_split = 0.2});
/// ```
inline ImageDirectorySplit image_directory_split(const std::filesystem::path& dir,
                                                 ImageDirectoryOptions options) {
  options.subset = Subset::both;
  detail::check_options(options);
  detail::Index index = detail::index_directory(dir, options);
  const std::size_t n = index.files.size();
  const std::size_t cut = n - detail::validation_count(options.validation_split, n);
  ImageDirectoryOptions train_options = options, val_options = options;
  train_options.subset = Subset::training;
  val_options.subset = Subset::validation;
  // Both subsets share the one listing; each holds only its files' 8-byte records.
  return ImageDirectorySplit{
      ImageDirectory(index.classes, index.listing, index.slice(0, cut), train_options),
      ImageDirectory(std::move(index.classes), std::move(index.listing), index.slice(cut, n),
                     val_options)};
}

/// Decodes the image file at `path` as a directory with `options` decodes each of its files
/// (size, colour mode, interpolation, crop, max_pixels), as Keras's `load_img` with
/// `target_size`: what `Model::predict(file, options)` reads. A file that cannot be decoded
/// raises `memopt::error` naming it, whatever `on_error` says.
///
/// ```cpp
/// auto train = mo::data::image_directory("photos", {.image_size = {128, 128}});
/// mo::io::image::Image img = mo::data::load_image("cat.jpg", train.options());
/// ```
inline io::image::Image load_image(const std::filesystem::path& path,
                                   const ImageDirectoryOptions& options) {
  // Only what decoding reads is checked: a split's options (a subset's) are welcome here.
  if (options.image_size[0] <= 0 || options.image_size[1] <= 0) {
    throw error("data::load_image: expected a positive image_size, found " +
                std::to_string(options.image_size[0]) + " x " +
                std::to_string(options.image_size[1]));
  }
  const io::image::LoadOptions load = ImageDirectory::load_options(options);
  io::image::Image image;
  image.height = load.height;
  image.width = load.width;
  image.channels = io::image::channels_of(load.color_mode);
  image.pixels.resize(load.bytes());
  io::image::load_into(path, load, image.pixels);
  return image;
}

namespace detail {

// The input shape of `M`: a Model's (`M::spec::shapes[0]`) or an Input's.
template <class M>
constexpr Shape input_shape_of() {
  if constexpr (is_input_v<M>) {
    return M::shape;
  } else {
    static_assert(
        requires { M::spec::shapes[0]; },
        "data::image_options_for<M>: M must be a mo::Model or a mo::Input<H, W, C>");
    return M::spec::shapes[0];
  }
}

inline std::string shape_text(std::size_t h, std::size_t w, std::size_t c) {
  return std::to_string(h) + " x " + std::to_string(w) + " x " + std::to_string(c);
}

}  // namespace detail

/// `options` with the image size and colour mode of `M`'s input (`M` a `Model` or an
/// `Input<H, W, C>`): `image_size` = {H, W}, `color_mode` grayscale for C = 1 and RGB for
/// C = 3. The size is written once, in the model, so that the images decoded cannot differ
/// from what the model reads. Leave `image_size` and `color_mode` out: a value other than
/// Keras's default ({256, 256}, rgb) that does not give the model's shape raises
/// `memopt::error` naming both shapes. (A default value cannot be told from one written out,
/// so it is replaced.) An Input that is not an image of 1 or 3 channels does not compile.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Flatten, mo::Dense<10, mo::Softmax>>;
/// using Model = mo::Model<Net, mo::Input<128, 128, 3>>;
/// auto val = mo::data::image_directory(
///     "photos", mo::data::image_options_for<Model>({.seed = 1337,
///                                                   .validation_split = 0.2,
///                                                   .subset = mo::data::Subset::validation}));
/// ```
template <class M>
ImageDirectoryOptions image_options_for(ImageDirectoryOptions options = {}) {
  constexpr Shape in = detail::input_shape_of<M>();
  static_assert(in.is_image() && (in.channels() == 1 || in.channels() == 3),
                "data::image_options_for<M>: M's Input must be an image Input<H, W, 1> "
                "(grayscale) or Input<H, W, 3> (RGB)");
  const std::array<int, 2> size = {static_cast<int>(in.height()), static_cast<int>(in.width())};
  const ColorMode mode = in.channels() == 1 ? ColorMode::grayscale : ColorMode::rgb;
  const std::string model = "data::image_options_for: the model's Input is " +
                            detail::shape_text(in.height(), in.width(), in.channels());
  if (options.image_size != ImageDirectoryOptions{}.image_size && options.image_size != size) {
    throw error(model + ", image_size asks for " +
                detail::shape_text(static_cast<std::size_t>(options.image_size[0]),
                                   static_cast<std::size_t>(options.image_size[1]), in.channels()) +
                "; leave image_size out (it is taken from the model)");
  }
  if (options.color_mode != ColorMode::rgb && options.color_mode != mode) {
    throw error(model + ", color_mode " + std::string(io::image::name_of(options.color_mode)) +
                " gives " + std::to_string(io::image::channels_of(options.color_mode)) +
                " channel(s); leave color_mode out (it is taken from the model)");
  }
  options.image_size = size;
  options.color_mode = mode;
  return options;
}

/// `image_directory(dir, image_options_for<M>(options))`: the images decoded at the input
/// shape of `M`, a `Model` or an `Input<H, W, C>`.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Flatten, mo::Dense<10, mo::Softmax>>;
/// using Model = mo::Model<Net, mo::Input<128, 128, 3>>;
/// auto train = mo::data::image_directory<Model>("photos", {.seed = 1337});
/// ```
template <class M>
ImageDirectory image_directory(const std::filesystem::path& dir,
                               ImageDirectoryOptions options = {}) {
  return image_directory(dir, image_options_for<M>(std::move(options)));
}

/// `image_directory_split(dir, image_options_for<M>(options))`.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Flatten, mo::Dense<10, mo::Softmax>>;
/// using Model = mo::Model<Net, mo::Input<128, 128, 3>>;
/// auto [train, val] = mo::data::image_directory_split<Model>("photos",
///                                                            {.seed = 1337,
///                                                             .validation_split = 0.2});
/// ```
template <class M>
ImageDirectorySplit image_directory_split(const std::filesystem::path& dir,
                                          ImageDirectoryOptions options) {
  return image_directory_split(dir, image_options_for<M>(std::move(options)));
}

}  // namespace memopt::data
