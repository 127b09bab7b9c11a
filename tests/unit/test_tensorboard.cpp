// TensorBoard's event files: CRC-32C, the protobuf encoder, TFRecord framing, histograms, and
// callbacks::TensorBoard's layout, read back here by a small decoder (the Python test reads
// them with TensorBoard's own reader).

#include <doctest/doctest.h>

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
#include "memopt/io/tfevents.hpp"
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
  char kind = 0;  // 's' scalar, 'h' histogram, 't' text
  std::string text;
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
};

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
