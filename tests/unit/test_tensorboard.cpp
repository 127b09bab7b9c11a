// TensorBoard's event files: CRC-32C, the protobuf encoder, TFRecord framing, histograms, and
// callbacks::TensorBoard's layout, read back here by a small decoder (the Python test reads
// them with TensorBoard's own reader); the PNG encoder and the memory timeline's pixels,
// read back through zlib.

#include <doctest/doctest.h>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/crc32c.hpp"
#include "memopt/io/detail/protobuf_writer.hpp"
#include "memopt/io/png_writer.hpp"
#include "memopt/io/tfevents.hpp"
#include "memopt/plan/timeline_image.hpp"
#include "memopt/train/callbacks/tensorboard.hpp"

#include "temp_dir.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;
using mo::io::detail::crc32c;
using mo::io::detail::masked_crc32c;
using mo::io::detail::ProtoWriter;

namespace {

std::string bytes(std::initializer_list<unsigned> v) {
  std::string s;
  for (const unsigned b : v) s += static_cast<char>(b);
  return s;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// A protobuf reader for the test's checks: the fields of one message, by number, keeping
// length-delimited payloads as bytes and numbers as their raw 64 bits.
struct Field {
  std::uint32_t number = 0;
  std::uint32_t wire = 0;
  std::uint64_t number_value = 0;
  std::string payload;
};

std::uint64_t get_varint(std::string_view s, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; at < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[at++]);
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if (!(b & 0x80)) return v;
  }
  throw mo::error("test decoder: truncated varint");
}

std::vector<Field> parse(std::string_view s) {
  std::vector<Field> out;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::uint64_t key = get_varint(s, at);
    Field f{static_cast<std::uint32_t>(key >> 3), static_cast<std::uint32_t>(key & 7), 0, {}};
    if (f.wire == 0) {
      f.number_value = get_varint(s, at);
    } else if (f.wire == 1 || f.wire == 5) {
      const int n = f.wire == 1 ? 8 : 4;
      REQUIRE(at + n <= s.size());
      for (int i = 0; i < n; ++i)
        f.number_value |= std::uint64_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
      at += n;
    } else {
      REQUIRE(f.wire == 2);
      const std::uint64_t n = get_varint(s, at);
      REQUIRE(at + n <= s.size());
      f.payload = std::string(s.substr(at, n));
      at += n;
    }
    out.push_back(std::move(f));
  }
  return out;
}

const Field* find(const std::vector<Field>& m, std::uint32_t number) {
  for (const Field& f : m)
    if (f.number == number) return &f;
  return nullptr;
}

// The records of a TFRecord file, each checked against its two masked CRCs.
std::vector<std::string> records(const std::string& file) {
  std::vector<std::string> out;
  std::size_t at = 0;
  const auto u32 = [&file](std::size_t i) {
    std::uint32_t v = 0;
    std::memcpy(&v, file.data() + i, 4);
    return v;
  };
  while (at + 12 <= file.size()) {
    std::uint64_t n = 0;
    std::memcpy(&n, file.data() + at, 8);
    REQUIRE(u32(at + 8) == masked_crc32c(std::string_view(file).substr(at, 8)));
    REQUIRE(at + 12 + n + 4 <= file.size());
    const std::string data = file.substr(at + 12, n);
    REQUIRE(u32(at + 12 + n) == masked_crc32c(data));
    out.push_back(data);
    at += 12 + n + 4;
  }
  CHECK(at == file.size());
  return out;
}

// One logged value: its event's step, and a scalar's value or a histogram's count.
struct Logged {
  std::int64_t step = 0;
  double value = 0;
  char kind = 0;     // 's' scalar, 'h' histogram, 't' text, 'i' image
  std::string text;  // a text's Markdown, an image's encoded bytes
  std::int64_t height = 0, width = 0, colorspace = 0;
};

// tag -> its values in file order; the first record must say "brain.Event:2".
std::multimap<std::string, Logged> events_of(const fs::path& file) {
  const std::vector<std::string> rs = records(read_file(file));
  REQUIRE(!rs.empty());
  const auto first = parse(rs[0]);
  REQUIRE(find(first, 3) != nullptr);
  CHECK(find(first, 3)->payload == "brain.Event:2");
  std::multimap<std::string, Logged> out;
  for (std::size_t i = 1; i < rs.size(); ++i) {
    const auto event = parse(rs[i]);
    REQUIRE(find(event, 1) != nullptr);  // wall_time
    const auto* step = find(event, 2);
    const auto* summary = find(event, 5);
    REQUIRE(summary != nullptr);
    for (const Field& v : parse(summary->payload)) {
      const auto value = parse(v.payload);
      REQUIRE(find(value, 1) != nullptr);
      Logged l;
      l.step = step ? static_cast<std::int64_t>(step->number_value) : 0;
      if (const auto* simple = find(value, 2)) {
        float f = 0;
        const auto bits = static_cast<std::uint32_t>(simple->number_value);
        std::memcpy(&f, &bits, 4);
        l.kind = 's';
        l.value = f;
      } else if (const auto* histo = find(value, 5)) {
        const auto h = parse(histo->payload);
        const auto* num = find(h, 3);
        REQUIRE(num != nullptr);
        std::memcpy(&l.value, &num->number_value, 8);
        l.kind = 'h';
      } else if (const auto* tensor = find(value, 8)) {
        const auto t = parse(tensor->payload);
        REQUIRE(find(t, 8) != nullptr);
        l.kind = 't';
        l.text = find(t, 8)->payload;
      } else if (const auto* image = find(value, 4)) {
        const auto im = parse(image->payload);
        REQUIRE(find(im, 4) != nullptr);
        l.kind = 'i';
        l.height = find(im, 1) ? static_cast<std::int64_t>(find(im, 1)->number_value) : 0;
        l.width = find(im, 2) ? static_cast<std::int64_t>(find(im, 2)->number_value) : 0;
        l.colorspace = find(im, 3) ? static_cast<std::int64_t>(find(im, 3)->number_value) : 0;
        l.text = find(im, 4)->payload;
      }
      out.emplace(find(value, 1)->payload, l);
    }
  }
  return out;
}

fs::path only_file(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  return files[0];
}

struct FakeModel : mo::TrainingContext {
  int my_rank = 0;
  std::vector<float> get_weights() const override { return {1, 2, 3, 4, 5}; }
  void set_weights(std::span<const float>) override {}
  void save_weights(const fs::path&) const override {}
  void save(const fs::path&) const override {}
  double learning_rate() const override { return 0.125; }
  int rank() const override { return my_rank; }
  std::string summary_text() const override { return "Model: \"sequential\"\n"; }
  std::vector<mo::NamedWeights> named_weights() const override {
    return {{"dense/kernel", {1, 2, 3, 4}}, {"dense/bias", {0.5f}}};
  }
  mo::MemoryFigures memory_figures() const override { return {4096, 512, 32}; }
  mo::plan::MemoryReport report;
  mo::plan::MemoryReport fit_memory_report() const override { return report; }
};

// A decoded PNG: its IHDR's fields and its pixels (filter bytes removed).
struct Png {
  std::uint32_t width = 0, height = 0;
  int depth = 0, colour_type = 0, interlace = 0;
  std::vector<std::uint8_t> rgb;
  std::array<std::uint8_t, 3> at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + static_cast<std::size_t>(x)) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

std::uint32_t be32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// Reads the chunks as the PNG specification lays them out, checking each CRC, and inflates
// the IDAT data; expects 8-bit RGB rows, each with filter 0 (what encode_png writes).
Png decode_png(std::string_view png) {
  REQUIRE(png.size() > 8);
  REQUIRE(png.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8));
  Png out;
  std::string idat;
  std::vector<std::string> types;
  std::size_t at = 8;
  while (at + 12 <= png.size()) {
    const std::uint32_t n = be32(png, at);
    REQUIRE(at + 12 + n <= png.size());
    const std::string_view type = png.substr(at + 4, 4), data = png.substr(at + 8, n);
    const uLong crc =
        ::crc32(::crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(png.data() + at + 4), n + 4);
    REQUIRE(be32(png, at + 8 + n) == static_cast<std::uint32_t>(crc));
    types.emplace_back(type);
    if (type == "IHDR") {
      REQUIRE(n == 13);
      out.width = be32(data, 0);
      out.height = be32(data, 4);
      out.depth = static_cast<unsigned char>(data[8]);
      out.colour_type = static_cast<unsigned char>(data[9]);
      out.interlace = static_cast<unsigned char>(data[12]);
    } else if (type == "IDAT") {
      idat.append(data);
    }
    at += 12 + n;
  }
  CHECK(at == png.size());
  REQUIRE(types.size() >= 3);
  CHECK(types.front() == "IHDR");
  CHECK(types.back() == "IEND");
  REQUIRE(out.depth == 8);
  REQUIRE(out.colour_type == 2);
  REQUIRE(out.interlace == 0);
  const std::size_t row = std::size_t{out.width} * 3;
  std::string raw((row + 1) * out.height, '\0');
  uLongf raw_size = raw.size();
  REQUIRE(::uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size,
                       reinterpret_cast<const Bytef*>(idat.data()), idat.size()) == Z_OK);
  REQUIRE(raw_size == raw.size());
  for (std::uint32_t y = 0; y < out.height; ++y) {
    REQUIRE(raw[y * (row + 1)] == '\0');
    const auto* p = reinterpret_cast<const std::uint8_t*>(raw.data() + y * (row + 1) + 1);
    out.rgb.insert(out.rgb.end(), p, p + row);
  }
  return out;
}

mo::plan::BufferReport buffer(mo::plan::BufferRole role, std::size_t offset, std::size_t bytes,
                              int first, int last) {
  return {"b", role, -1, bytes, offset, first, last};
}

// Six steps, an arena of six 1 KiB bands, every band a buffer's boundary: with equal bands
// the offset axis is exactly linear, so rows can be computed from offsets alone.
mo::plan::MemoryReport six_band_report() {
  using R = mo::plan::BufferRole;
  mo::plan::MemoryReport r;
  r.kind = "training";
  r.arena_bytes = r.lower_bound_bytes = 6144;
  r.steps = {"s0", "s1", "s2", "s3", "s4", "s5"};
  r.buffers = {buffer(R::input, 0, 1024, 0, 1),
               buffer(R::activation, 1024, 1024, 1, 3),
               buffer(R::activation_grad, 0, 1024, 3, 5),
               buffer(R::logits, 2048, 1024, 2, 4),
               buffer(R::parameter_grads, 4096, 1024, 0, 5),
               buffer(R::step_scalars, 5120, 1024, 0, 0)};
  // Bytes live per step: 3, 3, 3, 4, 3, 2 KiB, so step 3 is the peak; [3 KiB, 4 KiB) is free.
  return r;
}

}  // namespace

TEST_CASE("crc32c: the published check value and RFC 3720's vectors") {
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xFF')) == 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  CHECK(crc32c(ascending) == 0x46DD794Eu);
  // Continuing over pieces gives the whole's.
  CHECK(crc32c("6789", crc32c("12345")) == 0xE3069283u);
  // TensorBoard's own masked_crc32c(b"123456789") is 0xc78ab0e5.
  CHECK(masked_crc32c("123456789") == 0xC78AB0E5u);
}

TEST_CASE("ProtoWriter: the bytes of the wire format's examples") {
  CHECK(ProtoWriter{}.varint(1, 150).str() == bytes({0x08, 0x96, 0x01}));
  CHECK(ProtoWriter{}.bytes(2, "testing").str() ==
        bytes({0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}));
  ProtoWriter inner;
  inner.varint(1, 150);
  CHECK(ProtoWriter{}.message(3, inner).str() == bytes({0x1a, 0x03, 0x08, 0x96, 0x01}));
  // A negative int64 takes ten bytes.
  CHECK(ProtoWriter{}.varint(2, -1).str() ==
        bytes({0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  CHECK(ProtoWriter{}.varint(2, 0).str() == bytes({0x10, 0x00}));
  CHECK(ProtoWriter{}.float64(1, 1.0).str() == bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  CHECK(ProtoWriter{}.float32(2, 2.0f).str() == bytes({0x15, 0, 0, 0, 0x40}));
  const double two[] = {1.0, -2.0};
  CHECK(ProtoWriter{}.packed_doubles(6, two).str() ==
        bytes({0x32, 16, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0xc0}));
  CHECK(ProtoWriter{}.packed_doubles(6, {}).str().empty());
  // A field number past 15 takes a two-byte key.
  CHECK(ProtoWriter{}.varint(16, 1).str() == bytes({0x80, 0x01, 0x01}));
}

TEST_CASE("tfrecord: length, its masked CRC, the data, the data's masked CRC") {
  const std::string r = mo::io::detail::tfrecord("abc");
  REQUIRE(r.size() == 8 + 4 + 3 + 4);
  CHECK(r.substr(0, 8) == bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  std::uint32_t len_crc = 0, data_crc = 0;
  std::memcpy(&len_crc, r.data() + 8, 4);
  std::memcpy(&data_crc, r.data() + 15, 4);
  CHECK(len_crc == masked_crc32c(r.substr(0, 8)));
  CHECK(r.substr(12, 3) == "abc");
  CHECK(data_crc == masked_crc32c("abc"));
}

TEST_CASE("make_histogram: right-closed equal buckets, moments, non-finite values left out") {
  const float v[] = {0, 1, 2, 3, 4, std::numeric_limits<float>::quiet_NaN()};
  const mo::io::Histogram h = mo::io::make_histogram(v, 4);
  CHECK(h.min == 0);
  CHECK(h.max == 4);
  CHECK(h.num == 5);
  CHECK(h.sum == 10);
  CHECK(h.sum_squares == 30);
  CHECK(h.bucket_limit == std::vector<double>{1, 2, 3, 4});
  CHECK(h.bucket == std::vector<double>{2, 1, 1, 1});
  const float same[] = {7, 7, 7};
  const mo::io::Histogram one = mo::io::make_histogram(same, 30);
  CHECK(one.bucket_limit == std::vector<double>{7});
  CHECK(one.bucket == std::vector<double>{3});
  CHECK(mo::io::make_histogram({}, 30).bucket.empty());
}

TEST_CASE("EventFileWriter: TensorFlow's file name, a version record, then the values") {
  mo::testing::TempDir dir;
  fs::path path;
  {
    mo::io::EventFileWriter w(dir / "run");
    path = w.path();
    w.add_scalar("loss", 0.5, 3);
    w.add_text("note", "hello", 0);
  }
  const std::string name = path.filename().string();
  CHECK(name.starts_with("events.out.tfevents."));
  CHECK(path.parent_path() == dir / "run");
  const auto e = events_of(path);
  REQUIRE(e.count("loss") == 1);
  CHECK(e.find("loss")->second.step == 3);
  CHECK(e.find("loss")->second.value == 0.5);
  REQUIRE(e.count("note") == 1);
  CHECK(e.find("note")->second.text == "hello");
  // Two writers in the same second get different files.
  mo::io::EventFileWriter a(dir / "two"), b(dir / "two");
  CHECK(a.path() != b.path());
}

TEST_CASE("EventFileWriter: a folder it cannot create raises memopt::error naming it") {
  mo::testing::TempDir dir;
  std::ofstream(dir / "file") << "x";
  CHECK_THROWS_WITH_AS(mo::io::EventFileWriter(dir / "file" / "train"),
                       doctest::Contains((dir / "file" / "train").c_str()), mo::error);
}

TEST_CASE("callbacks::TensorBoard: Keras's train/ and validation/ runs and tags") {
  mo::testing::TempDir dir;
  FakeModel m;
  mo::callbacks::TensorBoard tb{
      {.log_dir = dir.path, .histogram_freq = 2, .write_graph = true, .update_freq = 2}};
  tb.set_context(&m);
  tb.on_train_begin({});
  for (int e = 0; e < 3; ++e) {
    tb.on_epoch_begin(e, {});
    for (int b = 0; b < 3; ++b) {
      tb.on_train_batch_begin(b);
      tb.on_train_batch_end(
          b, {.loss = 1.0 + b, .accuracy = 0.25, .samples = 8, .has_accuracy = true});
    }
    tb.on_epoch_end(e, {{"loss", 2.0 - e}, {"accuracy", 0.5}, {"val_loss", 3.0 - e}});
  }
  tb.on_train_end({});

  const auto train = events_of(only_file(dir / "train"));
  const auto val = events_of(only_file(dir / "validation"));
  // Epoch scalars at steps 0, 1, 2.
  REQUIRE(train.count("epoch_loss") == 3);
  std::int64_t step = 0;
  for (auto [it, end] = train.equal_range("epoch_loss"); it != end; ++it, ++step) {
    CHECK(it->second.step == step);
    CHECK(it->second.value == 2.0 - static_cast<double>(step));
  }
  CHECK(train.count("epoch_accuracy") == 3);
  CHECK(train.count("epoch_val_loss") == 0);
  REQUIRE(train.count("epoch_learning_rate") == 3);
  CHECK(train.find("epoch_learning_rate")->second.value == 0.125);
  REQUIRE(val.count("epoch_loss") == 3);
  CHECK(val.find("epoch_loss")->second.value == 3.0);
  // Batches 1..9 of this fit, every second one: 2, 4, 6, 8.
  REQUIRE(train.count("batch_loss") == 4);
  std::vector<std::int64_t> batch_steps;
  for (auto [it, end] = train.equal_range("batch_loss"); it != end; ++it)
    batch_steps.push_back(it->second.step);
  CHECK(batch_steps == std::vector<std::int64_t>{2, 4, 6, 8});
  CHECK(train.count("batch_accuracy") == 4);
  // Histograms at epochs 0 and 2.
  REQUIRE(train.count("dense/kernel/histogram") == 2);
  CHECK(train.find("dense/kernel/histogram")->second.value == 4);
  CHECK(train.find("dense/kernel/histogram")->second.kind == 'h');
  CHECK(train.count("dense/bias/histogram") == 2);
  // The summary, and memopt's memory.
  REQUIRE(train.count("model_summary") == 1);
  CHECK(train.find("model_summary")->second.text.find("Model: \"sequential\"") !=
        std::string::npos);
  REQUIRE(train.count("memory/arena_bytes") == 3);
  CHECK(train.find("memory/arena_bytes")->second.value == 4096);
  CHECK(train.find("memory/workspace_bytes")->second.value == 512);
  REQUIRE(train.count("memory/peak_rss_bytes") == 3);
  CHECK(train.find("memory/peak_rss_bytes")->second.value > 0);
}

TEST_CASE("callbacks::TensorBoard: every epoch is on disk before the next begins") {
  mo::testing::TempDir dir;
  FakeModel m;
  mo::callbacks::TensorBoard tb{{.log_dir = dir.path}};
  tb.set_context(&m);
  tb.on_train_begin({});
  tb.on_epoch_end(0, {{"loss", 1.0}});
  // Still open: what a reader (or a killed process's file) holds now.
  CHECK(events_of(tb.train_file()).count("epoch_loss") == 1);
  tb.on_epoch_end(1, {{"loss", 0.5}});
  CHECK(events_of(tb.train_file()).count("epoch_loss") == 2);
  tb.on_train_end({});
}

TEST_CASE("callbacks::TensorBoard: only rank 0 writes in a data-parallel fit") {
  mo::testing::TempDir dir;
  FakeModel m;
  m.my_rank = 1;
  mo::callbacks::TensorBoard tb{{.log_dir = dir.path, .histogram_freq = 1, .update_freq = 1}};
  tb.set_context(&m);
  tb.on_train_begin({});
  tb.on_train_batch_begin(0);
  tb.on_train_batch_end(0, {});
  tb.on_epoch_end(0, {{"loss", 1.0}, {"val_loss", 1.0}});
  tb.on_train_end({});
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("callbacks::TensorBoard: options out of range raise memopt::error") {
  CHECK_THROWS_AS(mo::callbacks::TensorBoard({.log_dir = ""}), mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::TensorBoard({.histogram_freq = -1}),
                       doctest::Contains("histogram_freq"), mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::TensorBoard({.update_freq = -2}),
                       doctest::Contains("update_freq"), mo::error);
}

TEST_CASE("encode_png: signature, IHDR, CRCs and pixels that zlib inflates back") {
  std::vector<std::uint8_t> rgb;
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 7; ++x)
      rgb.insert(rgb.end(), {static_cast<std::uint8_t>(x * 30), static_cast<std::uint8_t>(y * 50),
                             static_cast<std::uint8_t>(x * y)});
  const std::string png = mo::io::encode_png(rgb, 7, 5);
  const Png d = decode_png(png);
  CHECK(d.width == 7);
  CHECK(d.height == 5);
  CHECK(d.rgb == rgb);
  CHECK_THROWS_WITH_AS(mo::io::encode_png(rgb, 7, 4), doctest::Contains("found 105"), mo::error);
  CHECK_THROWS_WITH_AS(mo::io::encode_png({}, 0, 5), doctest::Contains("0 x 5"), mo::error);
}

TEST_CASE("memory_timeline_image: each buffer's rectangle spans its steps and its offsets") {
  const mo::plan::MemoryReport r = six_band_report();
  const mo::plan::TimelineImage im = mo::plan::memory_timeline_image(r);
  const Png png = decode_png(mo::plan::memory_timeline_png(r));
  REQUIRE(png.width == static_cast<std::uint32_t>(im.width));
  REQUIRE(png.height == static_cast<std::uint32_t>(im.height));
  CHECK(png.rgb == im.rgb);
  REQUIRE(im.plot_w % 6 == 0);
  REQUIRE(im.plot_h % 6 == 0);
  // Where the plan puts a buffer, from its offsets and steps alone (a linear axis here).
  const auto col = [&](int step) { return im.plot_x + step * im.plot_w / 6; };
  const auto row = [&](std::size_t bytes) {
    return im.plot_y + im.plot_h - static_cast<int>(bytes * std::size_t(im.plot_h) / 6144);
  };
  for (const mo::plan::BufferReport& b : r.buffers) {
    CAPTURE(static_cast<int>(b.role));
    const auto colour = mo::plan::role_rgb(b.role);
    const int x0 = col(b.first), x1 = col(b.last + 1);
    const int y0 = row(b.offset + b.bytes), y1 = row(b.offset);
    // Inside, two pixels in from every edge (the outline is one): the buffer's colour.
    for (const int x : {x0 + 2, (x0 + x1) / 2, x1 - 3})
      for (const int y : {y0 + 2, (y0 + y1) / 2, y1 - 3}) {
        CAPTURE(x);
        CAPTURE(y);
        CHECK(png.at(x, y) == colour);
      }
    // Two pixels outside each edge: something else (every role here has its own colour).
    const int xm = (x0 + x1) / 2, ym = (y0 + y1) / 2;
    CHECK(png.at(xm, y0 - 2) != colour);
    CHECK(png.at(xm, y1 + 1) != colour);
    CHECK(png.at(x0 - 2, ym) != colour);
    CHECK(png.at(x1 + 1, ym) != colour);
  }
  // The free band [3 KiB, 4 KiB): white, but shaded at the peak step (3).
  const int free_row = (row(3072) + row(4096)) / 2;
  CHECK(png.at((col(0) + col(1)) / 2, free_row) == std::array<std::uint8_t, 3>{255, 255, 255});
  CHECK(png.at((col(3) + col(4)) / 2, free_row) == std::array<std::uint8_t, 3>{0xff, 0xf3, 0xc4});
  // The frame: its top edge is the arena's size, its bottom edge offset 0.
  const std::array<std::uint8_t, 3> frame{0x33, 0x33, 0x33};
  CHECK(png.at(im.plot_x + 3, row(0)) == frame);
  CHECK(png.at(im.plot_x + im.plot_w / 2, row(6144) - 1) == frame);
}

TEST_CASE("memory_timeline_image: a small buffer beside a large one keeps 16 rows") {
  using R = mo::plan::BufferRole;
  mo::plan::MemoryReport r;
  r.arena_bytes = r.lower_bound_bytes = (1u << 20) + 256;
  r.steps = {"forward", "backward"};
  r.buffers = {buffer(R::parameter_grads, 0, 1u << 20, 0, 1),
               buffer(R::activation, 1u << 20, 200, 0, 0)};
  const mo::plan::TimelineImage im = mo::plan::memory_timeline_image(r);
  const int y0 = im.row_of(r.arena_bytes), y1 = im.row_of(1u << 20);
  CHECK(y1 - y0 >= 16);
  CHECK(im.row_of(0) == im.plot_y + im.plot_h);
  CHECK(y0 == im.plot_y);
  CHECK(im.pixel(im.plot_x + im.plot_w / 4, (y0 + y1) / 2) == mo::plan::role_rgb(R::activation));
  CHECK(im.pixel(im.plot_x + 3 * im.plot_w / 4, (y0 + y1) / 2) ==
        std::array<std::uint8_t, 3>{255, 255, 255});
  CHECK(im.pixel(im.plot_x + im.plot_w / 2, (y1 + im.row_of(0)) / 2) ==
        mo::plan::role_rgb(R::parameter_grads));
}

TEST_CASE("callbacks::TensorBoard: the memory timeline once, as a PNG at step 0") {
  mo::testing::TempDir dir;
  FakeModel m;
  m.report = six_band_report();
  mo::callbacks::TensorBoard tb{{.log_dir = dir.path}};
  tb.set_context(&m);
  tb.on_train_begin({});
  for (int e = 0; e < 2; ++e) {
    for (int b = 0; b < 2; ++b) {
      tb.on_train_batch_begin(b);
      tb.on_train_batch_end(b, {});
    }
    tb.on_epoch_end(e, {{"loss", 1.0}});
  }
  tb.on_train_end({});
  const auto train = events_of(only_file(dir / "train"));
  REQUIRE(train.count("memory/timeline") == 1);
  const Logged& l = train.find("memory/timeline")->second;
  CHECK(l.kind == 'i');
  CHECK(l.step == 0);
  CHECK(l.colorspace == 3);
  const Png png = decode_png(l.text);
  CHECK(l.width == png.width);
  CHECK(l.height == png.height);
  CHECK(png.rgb == mo::plan::memory_timeline_image(m.report).rgb);

  // No plan (no batch ran), or write_memory off: no picture.
  mo::testing::TempDir none;
  FakeModel empty;
  mo::callbacks::TensorBoard tb2{{.log_dir = none.path}};
  tb2.set_context(&empty);
  tb2.on_train_begin({});
  tb2.on_train_batch_begin(0);
  tb2.on_train_batch_end(0, {});
  tb2.on_epoch_end(0, {{"loss", 1.0}});
  tb2.on_train_end({});
  CHECK(events_of(only_file(none / "train")).count("memory/timeline") == 0);
  mo::testing::TempDir off;
  mo::callbacks::TensorBoard tb3{{.log_dir = off.path, .write_memory = false}};
  tb3.set_context(&m);
  tb3.on_train_begin({});
  tb3.on_train_batch_begin(0);
  tb3.on_train_batch_end(0, {});
  tb3.on_epoch_end(0, {{"loss", 1.0}});
  tb3.on_train_end({});
  CHECK(events_of(only_file(off / "train")).count("memory/timeline") == 0);
}
