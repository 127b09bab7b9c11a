#pragma once
// safetensors: reading and writing the format of Hugging Face's `safetensors` package.
//
// The layout, as its specification defines it:
//   8 bytes      N, the header's length, an unsigned little-endian 64-bit integer
//   N bytes      a UTF-8 JSON object: for each tensor, its name mapped to
//                {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]},
//                plus an optional "__metadata__" object of string values; the writer pads
//                it with spaces so that the data starts at a multiple of 8
//   the rest     the data section: every tensor's bytes, little-endian, row-major, with
//                offsets relative to the section's start, contiguous, no gap, no overlap
//
// Writes are atomic (io/detail/atomic_file.hpp). Reads trust nothing in the file: every
// length, offset and shape is checked before it is used, and a bad one raises memopt::error
// naming the tensor, what was expected and what was found.

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/core/dtype.hpp"
#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/json_value.hpp"
#include "memopt/io/json_writer.hpp"

namespace memopt::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors: the data section is little-endian; this host is not");

/// The element types of the safetensors specification. memopt converts F32, F16, BF16 and
/// I64; the others are read and checked (their sizes are known) but not converted.
///
/// ```cpp
/// const auto file = mo::io::SafetensorsFile::read("model.safetensors");
/// if (file.at("dense/kernel").dtype == mo::io::Dtype::bf16) { /* ... */ }
/// ```
enum class Dtype : std::uint8_t {
  boolean,
  u8,
  i8,
  f8_e5m2,
  f8_e4m3,
  i16,
  u16,
  f16,
  bf16,
  i32,
  u32,
  f32,
  f64,
  i64,
  u64,
};

namespace detail {

struct DtypeEntry {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};

inline constexpr std::array<DtypeEntry, 15> dtype_table{{
    {Dtype::boolean, "BOOL", 1},
    {Dtype::u8, "U8", 1},
    {Dtype::i8, "I8", 1},
    {Dtype::f8_e5m2, "F8_E5M2", 1},
    {Dtype::f8_e4m3, "F8_E4M3", 1},
    {Dtype::i16, "I16", 2},
    {Dtype::u16, "U16", 2},
    {Dtype::f16, "F16", 2},
    {Dtype::bf16, "BF16", 2},
    {Dtype::i32, "I32", 4},
    {Dtype::u32, "U32", 4},
    {Dtype::f32, "F32", 4},
    {Dtype::f64, "F64", 8},
    {Dtype::i64, "I64", 8},
    {Dtype::u64, "U64", 8},
}};

// The reference implementation refuses headers above 100 MB: a bigger one is an attack or
// a corrupt length, and either would make us allocate it.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
// And at most this many JSON values in it, so that a header cannot make the parsed tree many
// times its own size (`[0,0,...]` would take about 45 bytes of tree per byte of header). A
// tensor's entry is 6 values plus one a dimension: this admits over 100,000 tensors, and
// bounds the tree at about 100 MB (an array of 2^20 - 2 zeros peaked at 98 MB of RSS).
inline constexpr std::size_t max_header_values = std::size_t(1) << 20;

template <class T>
struct dtype_of_impl;
template <>
struct dtype_of_impl<float> : std::integral_constant<Dtype, Dtype::f32> {};
template <>
struct dtype_of_impl<half> : std::integral_constant<Dtype, Dtype::f16> {};
template <>
struct dtype_of_impl<bfloat16> : std::integral_constant<Dtype, Dtype::bf16> {};
template <>
struct dtype_of_impl<double> : std::integral_constant<Dtype, Dtype::f64> {};
template <>
struct dtype_of_impl<std::int64_t> : std::integral_constant<Dtype, Dtype::i64> {};
template <>
struct dtype_of_impl<std::int32_t> : std::integral_constant<Dtype, Dtype::i32> {};
template <>
struct dtype_of_impl<std::uint8_t> : std::integral_constant<Dtype, Dtype::u8> {};

inline std::string shape_string(std::span<const std::uint64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Elements of `shape` times `element_bytes`, or nothing when it overflows 64 bits.
inline std::optional<std::uint64_t> byte_count(std::span<const std::uint64_t> shape,
                                               std::uint64_t element_bytes) {
  std::uint64_t n = element_bytes;
  for (std::uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return std::nullopt;
    n *= d;
  }
  return n;
}

}  // namespace detail

/// The specification's name of `d`.
///
/// ```cpp
/// static_assert(mo::io::dtype_name(mo::io::Dtype::bf16) == "BF16");
/// ```
constexpr std::string_view dtype_name(Dtype d) {
  return detail::dtype_table[static_cast<std::size_t>(d)].name;
}

/// Bytes per element of `d`.
///
/// ```cpp
/// static_assert(mo::io::dtype_size(mo::io::Dtype::i64) == 8);
/// ```
constexpr std::size_t dtype_size(Dtype d) {
  return detail::dtype_table[static_cast<std::size_t>(d)].size;
}

/// The dtype the specification calls `name`, or nothing for a name it does not define.
///
/// ```cpp
/// assert(mo::io::parse_dtype("BF16") == mo::io::Dtype::bf16);
/// assert(!mo::io::parse_dtype("F33"));
/// ```
constexpr std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const auto& e : detail::dtype_table)
    if (e.name == name) return e.dtype;
  return std::nullopt;
}

/// The dtype that stores C++ type `T`: float F32, mo::half F16, mo::bfloat16 BF16, double
/// F64, std::int64_t I64, std::int32_t I32, std::uint8_t U8.
///
/// ```cpp
/// static_assert(mo::io::dtype_of<mo::half> == mo::io::Dtype::f16);
/// ```
template <class T>
inline constexpr Dtype dtype_of = detail::dtype_of_impl<T>::value;

/// A safetensors file's `__metadata__`: string keys, string values.
///
/// ```cpp
/// mo::io::Metadata m{{"format", "pt"}, {"epoch", "3"}};
/// ```
using Metadata = std::map<std::string, std::string, std::less<>>;

/// A tensor to write: its name, dtype, shape and bytes (little-endian, row-major). It views
/// the bytes; they must outlive the write.
///
/// ```cpp
/// std::vector<float> kernel(784 * 128);
/// auto t = mo::io::TensorView::of("dense/kernel", {784, 128}, std::span<const float>(kernel));
/// ```
struct TensorView {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> bytes;

  template <class T>
  static TensorView of(std::string name, std::vector<std::uint64_t> shape,
                       std::span<const T> values) {
    return {std::move(name), dtype_of<T>, std::move(shape), std::as_bytes(values)};
  }
};

namespace detail {

// The JSON header, padded with spaces to a multiple of 8 bytes. Tensors are laid out in the
// order given, each right after the previous one.
[[gnu::cold]] inline std::string encode_header(std::span<const TensorView> tensors,
                                               const Metadata& metadata) {
  JsonWriter header;
  header.begin_object();
  if (!metadata.empty()) {
    header.key("__metadata__").begin_object();
    for (const auto& [key, value] : metadata) header.key(key).value(value);
    header.end_object();
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw error(
          "safetensors: expected a tensor name other than \"\" and \"__metadata__\", "
          "found \"" +
          t.name + "\"");
    if (!names.insert(t.name).second)
      throw error("safetensors: tensor \"" + t.name + "\" is given twice; names must be unique");
    const auto bytes = byte_count(t.shape, dtype_size(t.dtype));
    if (!bytes || *bytes != t.bytes.size())
      throw error("safetensors: tensor \"" + t.name + "\": expected " +
                  (bytes ? std::to_string(*bytes) : std::string("an addressable number of")) +
                  " bytes for " + std::string(dtype_name(t.dtype)) + " " + shape_string(t.shape) +
                  ", found " + std::to_string(t.bytes.size()));
    header.key(t.name).begin_object();
    header.key("dtype").value(dtype_name(t.dtype));
    header.key("shape").begin_array();
    for (const std::uint64_t d : t.shape) header.value(d);
    header.end_array();
    header.key("data_offsets").begin_array().value(offset).value(offset + *bytes).end_array();
    header.end_object();
    offset += *bytes;
  }
  header.end_object();
  std::string text = std::move(header).text();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

inline std::array<std::byte, 8> little_endian_u64(std::uint64_t v) {
  std::array<std::byte, 8> b{};
  for (std::size_t i = 0; i < 8; ++i) b[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
  return b;
}

}  // namespace detail

/// The bytes of a safetensors file holding `tensors` and `metadata`.
///
/// ```cpp
/// std::vector<float> kernel(784 * 128);
/// const std::vector<mo::io::TensorView> tensors{
///     mo::io::TensorView::of("dense/kernel", {784, 128}, std::span<const float>(kernel))};
/// std::vector<std::byte> file = mo::io::encode_safetensors(tensors, {{"format", "pt"}});
/// ```
inline std::vector<std::byte> encode_safetensors(std::span<const TensorView> tensors,
                                                 const Metadata& metadata = {}) {
  const std::string header = detail::encode_header(tensors, metadata);
  const auto length = detail::little_endian_u64(header.size());
  // Sized once and filled by memcpy: appending with insert() made GCC 12 at -O3 warn of a
  // memmove into a region of size 0 (-Werror=stringop-overflow), a false positive.
  std::size_t total = length.size() + header.size();
  for (const TensorView& t : tensors) total += t.bytes.size();
  std::vector<std::byte> out(total);
  std::byte* p = out.data();
  std::memcpy(p, length.data(), length.size());
  p += length.size();
  std::memcpy(p, header.data(), header.size());
  p += header.size();
  for (const TensorView& t : tensors) {
    if (!t.bytes.empty()) std::memcpy(p, t.bytes.data(), t.bytes.size());
    p += t.bytes.size();
  }
  return out;
}

/// Writes `tensors` and `metadata` to `path` as a safetensors file, atomically: the file at
/// `path` is the old one or the complete new one, never a mix. Raises memopt::error, leaving
/// any previous file untouched, when a write, sync or rename fails.
///
/// ```cpp
/// std::vector<float> kernel(784 * 128);
/// const std::vector<mo::io::TensorView> tensors{
///     mo::io::TensorView::of("dense/kernel", {784, 128}, std::span<const float>(kernel))};
/// mo::io::save_safetensors("weights.safetensors", tensors, {{"epoch", "3"}});
/// ```
inline void save_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                             const Metadata& metadata = {}) {
  const std::string header = detail::encode_header(tensors, metadata);
  detail::AtomicFile file(path);
  file.write(detail::little_endian_u64(header.size()));
  file.write(std::as_bytes(std::span<const char>(header)));
  for (const TensorView& t : tensors) file.write(t.bytes);
  file.commit();
}

/// One tensor of a file read: its name, dtype, shape and byte range in the data section.
///
/// ```cpp
/// const auto file = mo::io::SafetensorsFile::read("model.safetensors");
/// for (const mo::io::TensorInfo& t : file.tensors())
///   std::printf("%s %s\n", t.name.c_str(), t.shape_string().c_str());  // dense/kernel [784, 128]
/// ```
struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  std::uint64_t elements() const { return (end - begin) / dtype_size(dtype); }
  std::string shape_string() const { return detail::shape_string(shape); }
};

/// A safetensors file read into memory and checked: header length within the file, a JSON
/// object with no duplicate names, known dtypes, shapes whose byte counts match their
/// offsets, offsets that tile the data section exactly, string-only metadata.
///
/// ```cpp
/// auto f = mo::io::SafetensorsFile::read("model.safetensors");
/// std::vector<float> kernel = f.floats("dense/kernel");
/// std::string epoch = f.metadata().at("epoch");
/// ```
class SafetensorsFile {
 public:
  /// Reads and checks the file at `path`.
  static SafetensorsFile read(const std::filesystem::path& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f)
      throw error("safetensors " + path.string() +
                  ": cannot open: " + io::detail::errno_message(errno));
    std::vector<std::byte> bytes;
    std::array<std::byte, 1 << 16> chunk;
    std::size_t n = 0;
    while ((n = std::fread(chunk.data(), 1, chunk.size(), f)) > 0)
      bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) throw error("safetensors " + path.string() + ": read error");
    return parse(std::move(bytes), path.string());
  }

  /// Checks `bytes` as a safetensors file; `source` names it in error messages.
  static SafetensorsFile parse(std::vector<std::byte> bytes, std::string source = "<memory>") {
    SafetensorsFile f;
    f.bytes_ = std::move(bytes);
    f.source_ = std::move(source);
    f.check();
    return f;
  }

  const std::string& source() const { return source_; }
  const Metadata& metadata() const { return metadata_; }
  /// The tensors in the order of their data.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  /// The tensor called `name`, or null.
  const TensorInfo* find(std::string_view name) const {
    for (const TensorInfo& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }

  /// The tensor called `name`; raises memopt::error listing the names the file has.
  const TensorInfo& at(std::string_view name) const {
    if (const TensorInfo* t = find(name)) return *t;
    throw fail("expected a tensor \"" + std::string(name) +
               "\", found none (the file has: " + names() + ")");
  }

  /// Every tensor name, comma-separated, in the order of their data.
  std::string names() const {
    std::string s;
    for (const TensorInfo& t : tensors_) s += (s.empty() ? "" : ", ") + t.name;
    return s.empty() ? "no tensors" : s;
  }

  /// The raw bytes of `t`.
  std::span<const std::byte> bytes(const TensorInfo& t) const {
    return std::span<const std::byte>(bytes_).subspan(data_start_ + t.begin, t.end - t.begin);
  }

  /// The values of a F32, F16 or BF16 tensor, converted to float, into `out`, whose size must
  /// be the tensor's element count.
  void read_floats(const TensorInfo& t, std::span<float> out) const {
    if (out.size() != t.elements())
      throw fail("tensor \"" + t.name + "\": expected " + std::to_string(out.size()) +
                 " elements, found " + std::to_string(t.elements()) + " (shape " +
                 t.shape_string() + ")");
    const std::byte* p = bytes(t).data();
    switch (t.dtype) {
      case Dtype::f32:
        if (!out.empty()) std::memcpy(out.data(), p, out.size() * sizeof(float));
        return;
      case Dtype::f16:
      case Dtype::bf16:
        for (std::size_t i = 0; i < out.size(); ++i) {
          std::uint16_t b = 0;
          std::memcpy(&b, p + 2 * i, 2);
          out[i] =
              t.dtype == Dtype::f16 ? float(half::from_bits(b)) : float(bfloat16::from_bits(b));
        }
        return;
      default:
        throw fail("tensor \"" + t.name + "\": expected dtype F32, F16 or BF16, found " +
                   std::string(dtype_name(t.dtype)));
    }
  }

  /// The values of the F32, F16 or BF16 tensor `name` as float.
  std::vector<float> floats(std::string_view name) const {
    const TensorInfo& t = at(name);
    std::vector<float> out(t.elements());
    read_floats(t, out);
    return out;
  }

  /// The values of the I64 tensor `name`.
  std::vector<std::int64_t> int64s(std::string_view name) const {
    const TensorInfo& t = at(name);
    if (t.dtype != Dtype::i64)
      throw fail("tensor \"" + t.name + "\": expected dtype I64, found " +
                 std::string(dtype_name(t.dtype)));
    std::vector<std::int64_t> out(t.elements());
    if (!out.empty()) std::memcpy(out.data(), bytes(t).data(), out.size() * sizeof(std::int64_t));
    return out;
  }

  /// An error whose message starts with this file's name.
  error fail(const std::string& what) const {
    return error("safetensors " + source_ + ": " + what);
  }

 private:
  SafetensorsFile() = default;

  [[gnu::cold]] void check() {
    if (bytes_.size() < 8)
      throw fail("truncated: expected at least 8 bytes for the header length, found " +
                 std::to_string(bytes_.size()));
    // Keras's weight files are HDF5: say how to read them, not that the length is wrong.
    constexpr std::string_view hdf5_signature = "\x89HDF\r\n\x1a\n";
    if (std::memcmp(bytes_.data(), hdf5_signature.data(), 8) == 0)
      throw fail(
          "expected a safetensors file, found an HDF5 file (Keras's .weights.h5 or .h5?): read "
          "it with mo::load_keras_weights from <memopt/io/keras_h5.hpp> (target memopt::hdf5), "
          "or, when it comes from elsewhere, mo::load_keras_weights_isolated from "
          "<memopt/io/keras_weights.hpp>");
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < 8; ++i)
      n |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(bytes_[i])) << (8 * i);
    if (n > detail::max_header_bytes)
      throw fail("expected a header length of at most " + std::to_string(detail::max_header_bytes) +
                 " bytes, found " + std::to_string(n));
    if (n > bytes_.size() - 8)
      throw fail("truncated: the header length " + std::to_string(n) +
                 " runs past the end of the file (" + std::to_string(bytes_.size()) +
                 " bytes, so at most " + std::to_string(bytes_.size() - 8) + ")");
    data_start_ = 8 + static_cast<std::size_t>(n);
    const char* text = reinterpret_cast<const char*>(bytes_.data() + 8);
    if (n == 0 || text[0] != '{')
      throw fail(std::string("expected the header to be a JSON object starting with '{', found ") +
                 (n == 0 ? "an empty header" : "'" + printable(text[0]) + "'"));
    parse_header(text, text + n);
    tile_data_section();
  }

  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    constexpr char hex[] = "0123456789abcdef";
    return std::string("\\x") + hex[u >> 4] + hex[u & 0xf];
  }

  void parse_header(const char* first, const char* last) {
    JsonValue header;
    try {
      header = parse_json(std::string_view(first, static_cast<std::size_t>(last - first)),
                          {.max_values = detail::max_header_values});
    } catch (const JsonError& e) {
      throw fail(std::string("expected a valid JSON header, found an error ") + e.what());
    }
    if (!header.is_object())
      throw fail("expected the header to be a JSON object, found " +
                 std::string(header.type_name()));

    for (const JsonMember& m : header.members) {
      if (m.key == "__metadata__") {
        read_metadata(m.value);
        continue;
      }
      tensors_.push_back(read_entry(m.key, m.value));
    }
  }

  void read_metadata(const JsonValue& m) {
    if (!m.is_object())
      throw fail("expected __metadata__ to be an object of strings, found " +
                 std::string(m.type_name()));
    for (const JsonMember& entry : m.members) {
      if (!entry.value.is_string())
        throw fail("__metadata__ \"" + entry.key + "\": expected a string value, found " +
                   std::string(entry.value.type_name()));
      metadata_.emplace(entry.key, entry.value.text);
    }
  }

  [[gnu::cold]] TensorInfo read_entry(const std::string& name, const JsonValue& entry) const {
    const auto bad = [&](const std::string& what) {
      return fail("tensor \"" + name + "\": " + what);
    };
    if (!entry.is_object())
      throw bad("expected an object with dtype, shape and data_offsets, found " +
                std::string(entry.type_name()));
    for (const JsonMember& m : entry.members)
      if (m.key != "dtype" && m.key != "shape" && m.key != "data_offsets")
        throw bad("expected only dtype, shape and data_offsets, found \"" + m.key + "\"");
    TensorInfo t;
    t.name = name;

    const JsonValue* dtype = entry.find("dtype");
    if (!dtype || !dtype->is_string())
      throw bad("expected a string dtype, found " +
                std::string(dtype ? dtype->type_name() : "none"));
    const std::string& dtype_text = dtype->text;
    const auto parsed = parse_dtype(dtype_text);
    if (!parsed)
      throw bad("expected a known dtype (F32, F16, BF16, I64, ...), found \"" + dtype_text + "\"");
    t.dtype = *parsed;

    const JsonValue* shape = entry.find("shape");
    if (!shape || !shape->is_array())
      throw bad("expected a shape array, found " +
                std::string(shape ? shape->type_name() : "none"));
    for (const JsonValue& d : shape->items) {
      const auto v = d.as_unsigned();
      if (!v) throw bad("expected shape entries that are unsigned integers, found " + d.dump());
      t.shape.push_back(*v);
    }

    const JsonValue* offsets = entry.find("data_offsets");
    if (!offsets || !offsets->is_array() || offsets->items.size() != 2 ||
        !offsets->items[0].as_unsigned() || !offsets->items[1].as_unsigned())
      throw bad("expected data_offsets [begin, end] of unsigned integers, found " +
                (offsets ? offsets->dump() : std::string("none")));
    t.begin = *offsets->items[0].as_unsigned();
    t.end = *offsets->items[1].as_unsigned();
    if (t.end < t.begin)
      throw bad("expected data_offsets with begin <= end, found [" + std::to_string(t.begin) +
                ", " + std::to_string(t.end) + "]");
    const auto expected = detail::byte_count(t.shape, dtype_size(t.dtype));
    if (!expected || *expected != t.end - t.begin)
      throw bad("expected " +
                (expected ? std::to_string(*expected) : std::string("a representable number of")) +
                " bytes for " + dtype_text + " " + t.shape_string() + ", found data_offsets [" +
                std::to_string(t.begin) + ", " + std::to_string(t.end) + "] (" +
                std::to_string(t.end - t.begin) + " bytes)");
    return t;
  }

  // The data section must be exactly the tensors' bytes, one after another.
  [[gnu::cold]] void tile_data_section() {
    std::ranges::sort(tensors_, [](const TensorInfo& a, const TensorInfo& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const std::uint64_t data_bytes = bytes_.size() - data_start_;
    std::uint64_t expected = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& t : tensors_) {
      if (t.begin < expected)
        throw fail("tensor \"" + t.name + "\": data_offsets [" + std::to_string(t.begin) + ", " +
                   std::to_string(t.end) + "] overlap tensor \"" + previous->name +
                   "\", which ends at " + std::to_string(expected) +
                   " (expected contiguous tensors)");
      if (t.begin > expected)
        throw fail("tensor \"" + t.name + "\": expected data to start at " +
                   std::to_string(expected) + ", found " + std::to_string(t.begin) +
                   " (a gap; expected contiguous tensors)");
      if (t.end > data_bytes)
        throw fail("tensor \"" + t.name + "\": data_offsets [" + std::to_string(t.begin) + ", " +
                   std::to_string(t.end) + "] run past the data section of " +
                   std::to_string(data_bytes) + " bytes (truncated file?)");
      expected = t.end;
      previous = &t;
    }
    if (expected != data_bytes)
      throw fail("expected a data section of " + std::to_string(expected) +
                 " bytes (the tensors' total), found " + std::to_string(data_bytes));
  }

  std::vector<std::byte> bytes_;
  std::string source_;
  std::size_t data_start_ = 0;
  Metadata metadata_;
  std::vector<TensorInfo> tensors_;
};

/// Reads and checks the safetensors file at `path` (SafetensorsFile::read).
///
/// ```cpp
/// auto f = mo::io::load_safetensors("model.safetensors");
/// ```
inline SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  return SafetensorsFile::read(path);
}

}  // namespace memopt::io
