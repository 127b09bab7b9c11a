// safetensors: the exact byte layout, strict reads, atomic writes, and the model's tensors.

#include <doctest/doctest.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/dtype.hpp"
#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/checkpoint.hpp"

#include "temp_dir.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using memopt::testing::TempDir;

std::vector<std::byte> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A file from a literal header and `data_bytes` bytes of data, for the malformed cases.
std::vector<std::byte> raw_file(const std::string& header, std::size_t data_bytes,
                                std::uint64_t declared = UINT64_MAX) {
  const std::uint64_t n = declared == UINT64_MAX ? header.size() : declared;
  std::vector<std::byte> b(8);
  for (int i = 0; i < 8; ++i) b[std::size_t(i)] = std::byte((n >> (8 * i)) & 0xff);
  for (char c : header) b.push_back(std::byte(c));
  for (std::size_t i = 0; i < data_bytes; ++i) b.push_back(std::byte(i & 0xff));
  return b;
}

std::string parse_error(const std::vector<std::byte>& bytes) {
  try {
    (void)mo::io::SafetensorsFile::parse(bytes, "bad.safetensors");
  } catch (const mo::error& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
using Small = mo::Model<Net, mo::Input<8>>;

}  // namespace

TEST_CASE("dtype names and sizes follow the specification") {
  using mo::io::Dtype;
  CHECK(mo::io::dtype_name(Dtype::f32) == "F32");
  CHECK(mo::io::dtype_name(Dtype::bf16) == "BF16");
  CHECK(mo::io::dtype_size(Dtype::i64) == 8);
  CHECK(mo::io::dtype_size(Dtype::f16) == 2);
  CHECK(mo::io::parse_dtype("F8_E4M3") == Dtype::f8_e4m3);
  CHECK_FALSE(mo::io::parse_dtype("F33").has_value());
  static_assert(mo::io::dtype_of<mo::half> == Dtype::f16);
  static_assert(mo::io::dtype_of<std::int64_t> == Dtype::i64);
}

TEST_CASE("the writer lays out bytes exactly as the specification says") {
  const std::vector<float> a{1.0f, -2.5f};
  const std::vector<std::int64_t> b{7};
  const std::vector<mo::io::TensorView> views{
      mo::io::TensorView::of("a", {2}, std::span<const float>(a)),
      mo::io::TensorView::of("b", {}, std::span<const std::int64_t>(b))};
  const auto bytes = mo::io::encode_safetensors(views, {{"k", "v"}});

  const std::string expected_json =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= std::uint64_t(std::to_integer<std::uint8_t>(bytes[std::size_t(i)])) << (8 * i);
  CHECK(n % 8 == 0);  // so the data starts 8-byte aligned
  CHECK(n >= expected_json.size());
  CHECK(n - expected_json.size() < 8);
  const std::string header(reinterpret_cast<const char*>(bytes.data() + 8), n);
  CHECK(header.substr(0, expected_json.size()) == expected_json);
  CHECK(header.find_first_not_of(' ', expected_json.size()) == std::string::npos);
  REQUIRE(bytes.size() == 8 + n + 16);
  float a0 = 0, a1 = 0;
  std::int64_t b0 = 0;
  std::memcpy(&a0, bytes.data() + 8 + n, 4);
  std::memcpy(&a1, bytes.data() + 8 + n + 4, 4);
  std::memcpy(&b0, bytes.data() + 8 + n + 8, 8);
  CHECK(a0 == 1.0f);
  CHECK(a1 == -2.5f);
  CHECK(b0 == 7);
}

TEST_CASE("F32, F16, BF16 and I64 tensors and metadata round-trip") {
  std::vector<float> f32(12);
  std::vector<mo::half> f16(5);
  std::vector<mo::bfloat16> bf16(3);
  std::vector<std::int64_t> i64{-3, 1LL << 40, 0};
  for (std::size_t i = 0; i < f32.size(); ++i) f32[i] = 0.37f * float(i) - 1.5f;
  for (std::size_t i = 0; i < f16.size(); ++i) f16[i] = mo::half(0.125f * float(i) + 0.1f);
  for (std::size_t i = 0; i < bf16.size(); ++i) bf16[i] = mo::bfloat16(3.14159f * float(i + 1));
  const std::vector<mo::io::TensorView> views{
      mo::io::TensorView::of("x/f32", {3, 4}, std::span<const float>(f32)),
      mo::io::TensorView::of("x/f16", {5}, std::span<const mo::half>(f16)),
      mo::io::TensorView::of("x/bf16", {1, 3}, std::span<const mo::bfloat16>(bf16)),
      mo::io::TensorView::of("x/i64", {3}, std::span<const std::int64_t>(i64)),
      mo::io::TensorView::of("empty", {0, 4}, std::span<const float>())};
  TempDir dir;
  mo::io::save_safetensors(dir / "t.safetensors", views, {{"epoch", "3"}, {"note", "héllo"}});
  const auto f = mo::io::SafetensorsFile::read(dir / "t.safetensors");
  CHECK(f.metadata().at("epoch") == "3");
  CHECK(f.metadata().at("note") == "héllo");
  CHECK(f.tensors().size() == 5);
  CHECK(f.at("x/f32").shape == std::vector<std::uint64_t>{3, 4});
  CHECK(f.floats("x/f32") == f32);
  const auto h = f.floats("x/f16");
  for (std::size_t i = 0; i < f16.size(); ++i) CHECK(h[i] == float(f16[i]));
  const auto b = f.floats("x/bf16");
  for (std::size_t i = 0; i < bf16.size(); ++i) CHECK(b[i] == float(bf16[i]));
  CHECK(f.int64s("x/i64") == i64);
  CHECK(f.floats("empty").empty());
  CHECK_THROWS_WITH_AS(f.floats("x/i64"),
                       doctest::Contains("expected dtype F32, F16 or BF16, found I64"), mo::error);
  CHECK_THROWS_WITH_AS(f.at("x/nope"), doctest::Contains("\"x/nope\""), mo::error);
}

TEST_CASE("the writer refuses inconsistent tensors") {
  const std::vector<float> v(6);
  CHECK_THROWS_WITH_AS(
      mo::io::encode_safetensors(
          std::vector{mo::io::TensorView::of("w", {2, 2}, std::span<const float>(v))}),
      doctest::Contains("tensor \"w\": expected 16 bytes for F32 [2, 2], found 24"), mo::error);
  CHECK_THROWS_WITH_AS(mo::io::encode_safetensors(std::vector{
                           mo::io::TensorView::of("w", {6}, std::span<const float>(v)),
                           mo::io::TensorView::of("w", {6}, std::span<const float>(v))}),
                       doctest::Contains("\"w\" is given twice"), mo::error);
  CHECK_THROWS_AS(mo::io::encode_safetensors(std::vector{
                      mo::io::TensorView::of("__metadata__", {6}, std::span<const float>(v))}),
                  mo::error);
}

TEST_CASE("strict reads: every malformed file raises memopt::error saying what and where") {
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  CHECK(parse_error(raw_file("{" + ok_entry + "}", 8)) == "no error");

  CHECK(parse_error({std::byte(1), std::byte(0)}) ==
        "safetensors bad.safetensors: truncated: expected at least 8 bytes for the header length, "
        "found 2");
  CHECK(parse_error(raw_file("{" + ok_entry + "}", 8, 4096))
            .find("the header length 4096 runs past the end of the file") != std::string::npos);
  CHECK(parse_error(raw_file("{}", 0, std::uint64_t(1) << 40)).find("at most 100000000") !=
        std::string::npos);
  CHECK(parse_error(raw_file(" {}", 0)).find("starting with '{', found ' '") != std::string::npos);
  CHECK(parse_error(raw_file("{\"w\":", 0)).find("expected a valid JSON header") !=
        std::string::npos);
  CHECK(parse_error(raw_file("[1,2]", 0)).find("starting with '{'") != std::string::npos);

  // Tensors: each message names the tensor, what was expected and what was found.
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8)) ==
        "safetensors bad.safetensors: tensor \"w\": expected a known dtype (F32, F16, BF16, I64, "
        "...), found \"F33\"");
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8))
            .find("tensor \"w\": expected 12 bytes for F32 [3], found data_offsets [0, 8]") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             12))
            .find("tensor \"v\": data_offsets [4, 12] overlap tensor \"w\"") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12))
            .find("tensor \"w\": expected data to start at 0, found 4") != std::string::npos);
  CHECK(parse_error(raw_file("{" + ok_entry + "}", 4))
            .find("tensor \"w\": data_offsets [0, 8] run past the data section of 4 bytes") !=
        std::string::npos);
  CHECK(parse_error(raw_file("{" + ok_entry + "}", 12))
            .find("expected a data section of 8 bytes (the tensors' total), found 12") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 0))
            .find("begin <= end") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8))
            .find("tensor \"w\": expected shape entries that are unsigned integers, found -2") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8))
            .find("expected data_offsets [begin, end] of unsigned integers, found [0]") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],)"
                             R"("data_offsets":[0,8]}})",
                             8))
            .find("a representable number of bytes") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8))
            .find("expected only dtype, shape and data_offsets, found \"x\"") != std::string::npos);
  CHECK(parse_error(raw_file(R"({"w":3})", 0)).find("tensor \"w\": expected an object") !=
        std::string::npos);
  CHECK(parse_error(raw_file("{" + ok_entry + "," + ok_entry + "}", 8))
            .find("expected unique keys in an object, found \"w\" twice") != std::string::npos);
  // Not JSON, with the byte where it stops being JSON.
  CHECK(parse_error(raw_file("{\"w\":\"\xff\"}", 0))
            .find("found an error at byte 6: expected UTF-8 text in a string") !=
        std::string::npos);
  CHECK(parse_error(raw_file(R"({"__metadata__":{"epoch":3}})", 0))
            .find("__metadata__ \"epoch\": expected a string value, found number") !=
        std::string::npos);
}

TEST_CASE("a header of more JSON values than a safetensors header needs is refused") {
  // `[0,0,...]` would otherwise make a tree about 45 times the header's size: this 2 MB one
  // holds two values more than the limit, and is stopped there rather than read.
  const std::size_t limit = mo::io::detail::max_header_values;
  std::string header = "{\"__metadata__\":[0";
  for (std::size_t i = 0; i < limit; ++i) header += ",0";
  header += "]}";
  CHECK(parse_error(raw_file(header, 0))
            .find("expected at most " + std::to_string(limit) + " values") != std::string::npos);
  // A file of 100,000 tensors (a header of 800,001 values) stays well inside it.
  std::string many = "{";
  for (int i = 0; i < 100'000; ++i)
    many += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"F32","shape":[1,1],)" +
            R"("data_offsets":[)" + std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  many += "}";
  CHECK(parse_error(raw_file(many, 400'000)) == "no error");
}

TEST_CASE("every truncation of a valid file is refused, never read out of bounds") {
  const std::vector<float> v{1, 2, 3, 4, 5, 6};
  const auto good = mo::io::encode_safetensors(
      std::vector{mo::io::TensorView::of("w", {2, 3}, std::span<const float>(v))}, {{"a", "b"}});
  for (std::size_t n = 0; n < good.size(); ++n) {
    const std::vector<std::byte> cut(good.begin(), good.begin() + std::ptrdiff_t(n));
    CHECK_THROWS_AS((void)mo::io::SafetensorsFile::parse(cut), mo::error);
  }
  CHECK(mo::io::SafetensorsFile::parse(good).floats("w") == v);
}

TEST_CASE("a failure between write and rename leaves the previous file intact") {
  TempDir dir;
  const std::vector<float> old_values{1, 2, 3}, new_values{4, 5, 6, 7};
  const fs::path target = dir / "ckpt.safetensors";
  mo::io::save_safetensors(
      target, std::vector{mo::io::TensorView::of("w", {3}, std::span<const float>(old_values))});
  const auto before = file_bytes(target);

  static fs::path seen;
  mo::io::detail::before_rename_hook = [](const fs::path& temporary) {
    seen = temporary;
    CHECK(fs::exists(temporary));  // written and synced, not yet renamed
    throw mo::error("injected failure before rename");
  };
  CHECK_THROWS_WITH_AS(
      mo::io::save_safetensors(target, std::vector{mo::io::TensorView::of(
                                           "w", {4}, std::span<const float>(new_values))}),
      "injected failure before rename", mo::error);
  mo::io::detail::before_rename_hook = nullptr;

  CHECK(seen.parent_path() == target.parent_path());  // same folder, so rename is atomic
  CHECK_FALSE(fs::exists(seen));                      // the temporary file is gone
  CHECK(file_bytes(target) == before);
  CHECK(leftovers(dir.path) == std::vector<std::string>{"ckpt.safetensors"});
  CHECK(mo::io::SafetensorsFile::read(target).floats("w") == old_values);

  // Without the hook the same call replaces it.
  mo::io::save_safetensors(
      target, std::vector{mo::io::TensorView::of("w", {4}, std::span<const float>(new_values))});
  CHECK(mo::io::SafetensorsFile::read(target).floats("w") == new_values);
  CHECK(leftovers(dir.path) == std::vector<std::string>{"ckpt.safetensors"});
}

TEST_CASE("a save killed mid-write leaves a temporary file that the next save removes") {
  TempDir dir;
  const fs::path target = dir / "ckpt.safetensors";
  const std::vector<float> v1{1, 2, 3}, v2{4, 5, 6};
  mo::io::save_safetensors(
      target, std::vector{mo::io::TensorView::of("w", {3}, std::span<const float>(v1))});

  // The child stops between writing its temporary file and the rename, tells us, and waits
  // for SIGKILL: a job preempted mid-save.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    static int fd = -1;
    fd = ready[1];
    mo::io::detail::before_rename_hook = [](const fs::path&) {
      const char c = 'x';
      if (::write(fd, &c, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    };
    try {
      mo::io::save_safetensors(
          target, std::vector{mo::io::TensorView::of("w", {3}, std::span<const float>(v2))});
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(5);
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));

  // ".ckpt.safetensors.tmp-PID-N", N being the child's count of saves (inherited).
  auto names = leftovers(dir.path);
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() == 2);
  CHECK(names[0].starts_with(".ckpt.safetensors.tmp-" + std::to_string(pid) + "-"));
  CHECK(names[1] == "ckpt.safetensors");

  // What must survive: another target's leftover, a live writer's (PID 1 always exists),
  // this process's own, and names that only look alike.
  const std::vector<std::string> keep{".other.safetensors.tmp-" + std::to_string(pid) + "-0",
                                      ".ckpt.safetensors.tmp-1-0",
                                      ".ckpt.safetensors.tmp-" + std::to_string(::getpid()) + "-99",
                                      ".ckpt.safetensors.tmp-" + std::to_string(pid) + "-0x",
                                      ".ckpt.safetensors.tmp-" + std::to_string(pid),
                                      "ckpt.safetensors.tmp-" + std::to_string(pid) + "-0"};
  for (const auto& k : keep) write_bytes(dir / k, {std::byte{1}});

  mo::io::save_safetensors(
      target, std::vector{mo::io::TensorView::of("w", {3}, std::span<const float>(v2))});
  CHECK(mo::io::SafetensorsFile::read(target).floats("w") == v2);
  names = leftovers(dir.path);
  std::sort(names.begin(), names.end());
  auto expected = keep;
  expected.push_back("ckpt.safetensors");
  std::sort(expected.begin(), expected.end());
  CHECK(names == expected);  // the stale file is gone, nothing else
}

TEST_CASE("a full disk (a file size limit) leaves the previous file intact") {
  TempDir dir;
  const fs::path target = dir / "ckpt.safetensors";
  const std::vector<float> small(4, 1.5f), large(64 * 1024, 2.5f);
  mo::io::save_safetensors(
      target, std::vector{mo::io::TensorView::of("w", {4}, std::span<const float>(small))});
  const auto before = file_bytes(target);

  // In a child: the limit and SIGXFSZ's disposition are per process.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // so that write() fails with EFBIG instead of killing us
    const rlimit limit{16 * 1024, 16 * 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    try {
      mo::io::save_safetensors(target, std::vector{mo::io::TensorView::of(
                                           "w", {large.size()}, std::span<const float>(large))});
    } catch (const mo::error& e) {
      ::_exit(std::strstr(e.what(), "could not write") && std::strstr(e.what(), "unchanged") ? 0
                                                                                             : 4);
    } catch (...) {
      ::_exit(5);
    }
    ::_exit(6);  // no error: wrong
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(file_bytes(target) == before);
  CHECK(leftovers(dir.path) == std::vector<std::string>{"ckpt.safetensors"});
}

namespace {

// Whether this process may mount a tmpfs in a private mount namespace (root, or
// CAP_SYS_ADMIN, and no seccomp filter in the way): tried in a child, whose namespace and
// mount vanish with it. Evaluated when the test below registers, so that without the
// permission doctest reports it as skipped rather than passed.
bool can_mount_tmpfs() {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(1);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(1);
    if (::mount("tmpfs", "/tmp", "tmpfs", 0, "size=64k") != 0) ::_exit(1);
    ::_exit(0);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("a full tmpfs leaves the previous file intact (when mounting is allowed)" *
          doctest::skip(!can_mount_tmpfs())) {
  TempDir dir;
  const fs::path mnt = dir / "mnt";
  fs::create_directories(mnt);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // A private mount namespace: the mount vanishes with this child, whatever happens.
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(77);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(77);
    if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) ::_exit(77);
    const fs::path target = mnt / "ckpt.safetensors";
    const std::vector<float> small(1024, 1.5f), large(64 * 1024, 2.5f);
    try {
      mo::io::save_safetensors(target, std::vector{mo::io::TensorView::of(
                                           "w", {small.size()}, std::span<const float>(small))});
      const auto before = file_bytes(target);
      try {
        mo::io::save_safetensors(target, std::vector{mo::io::TensorView::of(
                                             "w", {large.size()}, std::span<const float>(large))});
        ::_exit(6);
      } catch (const mo::error& e) {
        if (!std::strstr(e.what(), "No space left")) ::_exit(4);
      }
      if (file_bytes(target) != before) ::_exit(7);
      if (mo::io::SafetensorsFile::read(target).floats("w") != small) ::_exit(8);
      if (leftovers(mnt).size() != 1) ::_exit(9);
    } catch (...) {
      ::_exit(5);
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 77: the mount failed although the probe above succeeded
}

TEST_CASE("writing into a missing folder raises memopt::error naming the path") {
  const std::vector<float> v{1};
  CHECK_THROWS_WITH_AS(mo::io::save_safetensors("/nonexistent-memopt-dir/x.safetensors",
                                                std::vector{mo::io::TensorView::of(
                                                    "w", {1}, std::span<const float>(v))}),
                       doctest::Contains("/nonexistent-memopt-dir/x.safetensors"), mo::error);
}

TEST_CASE("save_weights writes Keras's names and [inputs, units] kernels") {
  TempDir dir;
  Small model{3};
  model.save_weights(dir / "w.safetensors");
  const auto f = mo::io::SafetensorsFile::read(dir / "w.safetensors");
  std::vector<std::string> names;
  for (const auto& t : f.tensors()) names.push_back(t.name + " " + t.shape_string());
  CHECK(names == std::vector<std::string>{"dense/kernel [8, 16]", "dense/bias [16]",
                                          "dense_1/kernel [16, 4]", "dense_1/bias [4]"});
  CHECK(f.metadata().at("policy") == "float32");
  CHECK(f.metadata().at("contents") == "weights");
  CHECK(f.metadata().at("model") == "Input<8> dense(16, relu) dense_1(4, softmax)");

  // A forward pass in float64 that reads the tensors the Keras way (y = x @ kernel + bias)
  // reproduces predict: the layout is Keras's, not a transpose of it.
  std::vector<float> x(3 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i % 7) - 0.3f;
  const auto probs = model.predict(x);
  const auto k0 = f.floats("dense/kernel"), b0 = f.floats("dense/bias");
  const auto k1 = f.floats("dense_1/kernel"), b1 = f.floats("dense_1/bias");
  double err = 0, norm = 0;
  for (std::size_t r = 0; r < 3; ++r) {
    std::vector<double> h(16), z(4);
    for (std::size_t u = 0; u < 16; ++u) {
      double s = b0[u];
      for (std::size_t i = 0; i < 8; ++i) s += double(x[r * 8 + i]) * k0[i * 16 + u];
      h[u] = s > 0 ? s : 0;
    }
    double m = -1e300, sum = 0;
    for (std::size_t u = 0; u < 4; ++u) {
      z[u] = b1[u];
      for (std::size_t i = 0; i < 16; ++i) z[u] += h[i] * k1[i * 4 + u];
      m = std::max(m, z[u]);
    }
    for (auto& v : z) sum += (v = std::exp(v - m));
    for (std::size_t u = 0; u < 4; ++u) {
      const double p = z[u] / sum;
      err += (p - probs[r * 4 + u]) * (p - probs[r * 4 + u]);
      norm += p * p;
    }
  }
  CHECK(std::sqrt(err / norm) < 1e-6);
}

TEST_CASE("load_weights restores exactly and refuses what does not match") {
  TempDir dir;
  Small a{3}, b{4};
  CHECK(a.get_weights() != b.get_weights());
  a.save_weights(dir / "w.safetensors");
  b.load_weights(dir / "w.safetensors");
  CHECK(b.get_weights() == a.get_weights());

  // Another policy reads the same float32 master weights.
  mo::Model<Net, mo::Input<8>, mo::mixed_bfloat16> c{5};
  c.load_weights(dir / "w.safetensors");
  CHECK(c.get_weights() == a.get_weights());

  // A different width: the message names the tensor, the expected and the found shape.
  mo::Model<mo::Sequential<mo::Dense<12, mo::ReLU>, mo::Dense<4, mo::Softmax>>, mo::Input<8>> d{1};
  CHECK_THROWS_WITH_AS(
      d.load_weights(dir / "w.safetensors"),
      doctest::Contains("tensor \"dense/kernel\": expected shape [8, 12], found [8, 16]"),
      mo::error);
  // A deeper model: a missing tensor.
  mo::Model<
      mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::ReLU>, mo::Dense<4, mo::Softmax>>,
      mo::Input<8>>
      e{1};
  CHECK_THROWS_WITH_AS(
      e.load_weights(dir / "w.safetensors"),
      doctest::Contains("expected tensor \"dense_2/kernel\" of shape [4, 4], found none"),
      mo::error);

  // An extra tensor.
  const auto w = a.get_weights();
  const std::vector<float> extra{1, 2};
  std::vector<mo::io::TensorView> views;
  for (const auto& s : mo::checkpoint::parameter_slices<Small::spec>())
    views.push_back(mo::io::TensorView::of(s.name, s.shape,
                                           std::span<const float>(w).subspan(s.offset, s.size)));
  views.push_back(mo::io::TensorView::of("dense_2/bias", {2}, std::span<const float>(extra)));
  mo::io::save_safetensors(dir / "extra.safetensors", views);
  CHECK_THROWS_WITH_AS(b.load_weights(dir / "extra.safetensors"),
                       doctest::Contains("unexpected tensor \"dense_2/bias\" [2]"), mo::error);

  // F16 tensors (a half-precision export) load, converted.
  std::vector<std::vector<mo::half>> halves;
  views.clear();
  for (const auto& s : mo::checkpoint::parameter_slices<Small::spec>()) {
    halves.emplace_back(w.begin() + std::ptrdiff_t(s.offset),
                        w.begin() + std::ptrdiff_t(s.offset + s.size));
    views.push_back(
        mo::io::TensorView::of(s.name, s.shape, std::span<const mo::half>(halves.back())));
  }
  mo::io::save_safetensors(dir / "half.safetensors", views);
  b.load_weights(dir / "half.safetensors");
  const auto got = b.get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(got[i] == float(mo::half(w[i])));

  // A truncated checkpoint.
  const auto bytes = file_bytes(dir / "w.safetensors");
  REQUIRE(bytes.size() > 64);
  write_bytes(dir / "cut.safetensors", std::vector<std::byte>(bytes.begin(), bytes.end() - 4));
  CHECK_THROWS_WITH_AS(b.load_weights(dir / "cut.safetensors"),
                       doctest::Contains("run past the data section"), mo::error);
}

TEST_CASE("a ModelLayout reads and writes what the model's type does, with no type in sight") {
  TempDir dir;
  using Spec = Small::spec;
  const mo::checkpoint::ModelLayout layout = mo::checkpoint::layout_of<Spec>();
  CHECK(layout.description == mo::checkpoint::model_description<Spec>());
  CHECK(layout.hash() == mo::checkpoint::model_hash<Spec>());
  CHECK(layout.policy == "float32");
  CHECK(layout.parameter_count == Spec::parameter_count);
  CHECK(layout.parameters.size() == 4);
  CHECK(layout.state_count == 0);
  CHECK(layout.weights.size() == 4);  // no non-trainable ones: the same as the parameters

  Small a{3}, b{4};
  REQUIRE(a.get_weights() != b.get_weights());
  // Written through the layout, read by the typed model; and the other way round.
  mo::checkpoint::save_weights(dir / "w.safetensors", layout, a.get_weights());
  b.load_weights(dir / "w.safetensors");
  CHECK(b.get_weights() == a.get_weights());
  Small c{5};
  c.save_weights(dir / "c.safetensors");
  CHECK(mo::checkpoint::load_weights(mo::io::SafetensorsFile::read(dir / "c.safetensors"),
                                     layout) == c.get_weights());

  // A full checkpoint through the layout: optimizer state, step and epoch come back.
  mo::checkpoint::TrainingState s;
  s.weights = a.get_weights();
  s.optimizer = "sgd";
  s.optimizer_state.resize(Spec::parameter_count);
  for (std::size_t i = 0; i < s.optimizer_state.size(); ++i)
    s.optimizer_state[i] = 0.01f * float(i % 13) - 0.05f;
  s.iterations = 17;
  s.epoch = 2;
  mo::checkpoint::save(dir / "full.safetensors", layout, s);
  const auto back = mo::checkpoint::load<Spec>(dir / "full.safetensors", "sgd", 1);
  CHECK(back.weights == s.weights);
  CHECK(back.optimizer_state == s.optimizer_state);
  CHECK(back.iterations == 17);
  CHECK(back.epoch == 2);

  // A layout of another type refuses the file, naming both descriptions.
  using Wider =
      mo::Model<mo::Sequential<mo::Dense<12, mo::ReLU>, mo::Dense<4, mo::Softmax>>, mo::Input<8>>;
  CHECK_THROWS_WITH_AS(
      mo::checkpoint::load(mo::io::SafetensorsFile::read(dir / "full.safetensors"),
                           mo::checkpoint::layout_of<Wider::spec>(), "sgd", {"momentum"}),
      doctest::Contains("(Input<8> dense(12, relu) dense_1(4, softmax)), found"), mo::error);
}
