#pragma once
// io::EventFileWriter: TensorBoard's event files (`events.out.tfevents.*`), written without
// TensorFlow or libprotobuf.
//
// A file is a sequence of TFRecord records: the data's length (uint64, little-endian), the
// masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data. Each record's
// data is an `Event` protobuf (tensorboard/compat/proto/event.proto): the first says the file
// version "brain.Event:2"; the others carry a `Summary` of tagged values at a step. The field
// numbers used here are those of event.proto, summary.proto, histogram.proto and tensor.proto.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/detail/crc32c.hpp"
#include "memopt/io/detail/protobuf_writer.hpp"

namespace memopt::io {

/// A HistogramProto's contents: bucket `i` counts the values in (bucket_limit[i-1],
/// bucket_limit[i]] (the first from -infinity), as TensorBoard reads it.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit, bucket;
};

/// `values` in `buckets` equal-width buckets from their minimum to their maximum (one bucket
/// when all are equal). Non-finite values are left out: they have no place on the axis.
///
/// ```cpp
/// std::vector<float> weights = model.get_weights();
/// mo::io::Histogram h = mo::io::make_histogram(weights, 30);
/// ```
inline Histogram make_histogram(std::span<const float> values, int buckets = 30) {
  Histogram h;
  bool any = false;
  for (const float f : values) {
    if (!std::isfinite(f)) continue;
    const double v = f;
    h.min = any ? std::min(h.min, v) : v;
    h.max = any ? std::max(h.max, v) : v;
    any = true;
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (!any) return h;
  const int k = h.max > h.min ? std::max(buckets, 1) : 1;
  const double width = (h.max - h.min) / k;
  h.bucket.assign(static_cast<std::size_t>(k), 0.0);
  for (int i = 0; i < k; ++i)
    h.bucket_limit.push_back(i + 1 == k ? h.max : h.min + (i + 1) * width);
  for (const float f : values) {
    if (!std::isfinite(f)) continue;
    // The first limit at or above the value: right-closed buckets, as the reader's.
    const auto at = std::lower_bound(h.bucket_limit.begin(), h.bucket_limit.end(), double{f});
    const auto i = std::min<std::ptrdiff_t>(at - h.bucket_limit.begin(), k - 1);
    h.bucket[static_cast<std::size_t>(i)] += 1;
  }
  return h;
}

namespace detail {

/// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
inline std::string tfrecord(std::string_view data) {
  std::string r;
  r.reserve(data.size() + 16);
  const auto put = [&r](std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) r += static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  put(data.size(), 8);
  put(io::detail::masked_crc32c(std::string_view(r.data(), 8)), 4);
  r.append(data);
  put(io::detail::masked_crc32c(data), 4);
  return r;
}

// Field numbers of the messages written (the .proto files named above).
namespace field {
inline constexpr std::uint32_t event_wall_time = 1, event_step = 2, event_file_version = 3,
                               event_summary = 5, event_source_metadata = 10;
inline constexpr std::uint32_t source_writer = 1;
inline constexpr std::uint32_t summary_value = 1;
inline constexpr std::uint32_t value_tag = 1, value_simple_value = 2, value_image = 4,
                               value_histo = 5, value_tensor = 8, value_metadata = 9;
inline constexpr std::uint32_t histo_min = 1, histo_max = 2, histo_num = 3, histo_sum = 4,
                               histo_sum_squares = 5, histo_bucket_limit = 6, histo_bucket = 7;
inline constexpr std::uint32_t image_height = 1, image_width = 2, image_colorspace = 3,
                               image_encoded = 4;
inline constexpr std::uint32_t tensor_dtype = 1, tensor_shape = 2, tensor_string_val = 8;
inline constexpr std::uint32_t metadata_plugin_data = 1, metadata_data_class = 4;
inline constexpr std::uint32_t plugin_name = 1;
inline constexpr std::int64_t dt_string = 7;          // types.proto's DataType
inline constexpr std::int64_t data_class_tensor = 2;  // summary.proto's DataClass
}  // namespace field

/// The bytes of a Summary.Value of each kind.
inline io::detail::ProtoWriter scalar_value(std::string_view tag, double value) {
  io::detail::ProtoWriter v;
  v.bytes(field::value_tag, tag).float32(field::value_simple_value, static_cast<float>(value));
  return v;
}

inline io::detail::ProtoWriter histogram_value(std::string_view tag, const Histogram& h) {
  io::detail::ProtoWriter histo;
  histo.float64(field::histo_min, h.min)
      .float64(field::histo_max, h.max)
      .float64(field::histo_num, h.num)
      .float64(field::histo_sum, h.sum)
      .float64(field::histo_sum_squares, h.sum_squares)
      .packed_doubles(field::histo_bucket_limit, h.bucket_limit)
      .packed_doubles(field::histo_bucket, h.bucket);
  io::detail::ProtoWriter v;
  v.bytes(field::value_tag, tag).message(field::value_histo, histo);
  return v;
}

/// A rank-0 string tensor for the Text dashboard (plugin "text"), which renders Markdown.
inline io::detail::ProtoWriter text_value(std::string_view tag, std::string_view text) {
  io::detail::ProtoWriter plugin;
  plugin.bytes(field::plugin_name, "text");
  io::detail::ProtoWriter metadata;
  metadata.message(field::metadata_plugin_data, plugin)
      .varint(field::metadata_data_class, field::data_class_tensor);
  io::detail::ProtoWriter tensor;
  tensor.varint(field::tensor_dtype, field::dt_string)
      .message(field::tensor_shape, io::detail::ProtoWriter{})  // no dims: a scalar
      .bytes(field::tensor_string_val, text);
  io::detail::ProtoWriter v;
  v.bytes(field::value_tag, tag)
      .message(field::value_metadata, metadata)
      .message(field::value_tensor, tensor);
  return v;
}

/// An encoded image (PNG) for the Images dashboard; `channels`: 1 gray, 3 RGB, 4 RGBA.
inline io::detail::ProtoWriter image_value(std::string_view tag, std::string_view png, int height,
                                           int width, int channels) {
  io::detail::ProtoWriter image;
  image.varint(field::image_height, height)
      .varint(field::image_width, width)
      .varint(field::image_colorspace, channels)
      .bytes(field::image_encoded, png);
  io::detail::ProtoWriter v;
  v.bytes(field::value_tag, tag).message(field::value_image, image);
  return v;
}

inline std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace detail

/// Appends events to a new file in `folder` named as TensorFlow names them,
/// `events.out.tfevents.<seconds>.<host>.<pid>.<n>`, where TensorBoard finds it
/// (`tensorboard --logdir <folder's parent>`). Records are buffered; flush() hands them to the
/// system (the TensorBoard callback does after every epoch), so a process killed later leaves
/// every flushed record readable, and TensorBoard skips a half-written last record.
///
/// ```cpp
/// mo::io::EventFileWriter w("logs/train");
/// w.add_scalar("epoch_loss", 0.25, 0);
/// w.flush();
/// ```
class EventFileWriter {
 public:
  explicit EventFileWriter(const std::filesystem::path& folder) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec)
      throw error("EventFileWriter: cannot create the folder " + folder.string() + ": " +
                  ec.message());
    static std::atomic<unsigned> counter{0};
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    path_ =
        folder / fmt::format("events.out.tfevents.{:010d}.{}.{}.{}", seconds, detail::hostname(),
                             static_cast<long long>(::getpid()), counter.fetch_add(1));
    file_ = std::fopen(path_.c_str(), "wbx");  // x: never append to another writer's file
    if (!file_)
      throw error("EventFileWriter: cannot create " + path_.string() + ": " +
                  io::detail::errno_message(errno));
    io::detail::ProtoWriter source;
    source.bytes(detail::field::source_writer, "memopt");
    io::detail::ProtoWriter event;
    event.float64(detail::field::event_wall_time, now())
        .varint(detail::field::event_step, 0)
        .bytes(detail::field::event_file_version, "brain.Event:2")
        .message(detail::field::event_source_metadata, source);
    write_record(event.str());
    flush();
  }
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;
  ~EventFileWriter() {
    if (file_) std::fclose(file_);  // unflushed records still reach the file here
  }

  const std::filesystem::path& path() const { return path_; }

  /// A scalar (stored as float32, as TensorBoard keeps scalars) for the Scalars dashboard.
  void add_scalar(std::string_view tag, double value, std::int64_t step) {
    add_value(detail::scalar_value(tag, value), step);
  }
  /// The histogram of `values` for the Histograms and Distributions dashboards.
  void add_histogram(std::string_view tag, std::span<const float> values, std::int64_t step,
                     int buckets = 30) {
    add_value(detail::histogram_value(tag, make_histogram(values, buckets)), step);
  }
  /// Markdown text for the Text dashboard.
  void add_text(std::string_view tag, std::string_view markdown, std::int64_t step) {
    add_value(detail::text_value(tag, markdown), step);
  }
  /// A PNG image of `height` x `width` pixels with `channels` channels.
  void add_png(std::string_view tag, std::string_view png, int height, int width, int channels,
               std::int64_t step) {
    add_value(detail::image_value(tag, png, height, width, channels), step);
  }

  /// Hands buffered records to the system; raises memopt::error if it cannot.
  void flush() {
    if (std::fflush(file_) != 0)
      throw error("EventFileWriter: cannot write " + path_.string() + ": " +
                  io::detail::errno_message(errno));
  }

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  void add_value(const io::detail::ProtoWriter& value, std::int64_t step) {
    io::detail::ProtoWriter summary;
    summary.message(detail::field::summary_value, value);
    io::detail::ProtoWriter event;
    event.float64(detail::field::event_wall_time, now())
        .varint(detail::field::event_step, step)
        .message(detail::field::event_summary, summary);
    write_record(event.str());
  }

  void write_record(std::string_view data) {
    const std::string r = detail::tfrecord(data);
    if (std::fwrite(r.data(), 1, r.size(), file_) != r.size())
      throw error("EventFileWriter: cannot write " + path_.string() + ": " +
                  io::detail::errno_message(errno));
  }

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace memopt::io
