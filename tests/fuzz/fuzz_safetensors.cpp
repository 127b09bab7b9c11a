// libFuzzer target for the safetensors reader: any bytes must either parse into a file whose
// every tensor can be read, or raise memopt::error. A crash, a sanitizer report, a leak or a
// hang is a bug. The same bytes, read as JSON text, must be accepted by memopt's JSON reader
// exactly when nlohmann-json accepts them, but for what memopt refuses on purpose (a key
// given twice, deep nesting, a byte-order mark), and for two of nlohmann's choices: a NUL byte
// ends its text, and it refuses a number beyond double's range.
//
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
//     tests/fuzz/fuzz_safetensors.cpp -lfmt -o fuzz_safetensors
//   ./fuzz_safetensors -max_total_time=60 corpus/ tests/fuzz/corpus/
// (scripts/fuzz.sh does this; CTest runs it briefly as fuzz.safetensors.)

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "memopt/core/error.hpp"
#include "memopt/io/json_value.hpp"
#include "memopt/io/safetensors.hpp"

namespace {

void check_json_reader(std::string_view text) {
  bool accepted = true;
  std::string why;
  try {
    (void)memopt::io::parse_json(text);
  } catch (const memopt::io::JsonError& e) {
    accepted = false;
    why = e.what();
  }
  const bool reference = nlohmann::json::accept(text.begin(), text.end());
  if (accepted && !reference) {
    // nlohmann converts every number and refuses one beyond double's range; memopt keeps
    // the literal and accepts it, as the grammar does.
    try {
      [[maybe_unused]] const auto parsed = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::out_of_range& e) {
      if (e.id == 406) return;
    } catch (const nlohmann::json::exception&) {
    }
    __builtin_trap();
  }
  const bool on_purpose = why.find("twice") != std::string::npos ||
                          why.find("levels of nesting") != std::string::npos ||
                          text.starts_with("\xef\xbb\xbf") ||
                          text.find('\0') != std::string_view::npos;
  if (!accepted && reference && !on_purpose) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The JSON reader on the header as the length prefix gives it, and on all of the bytes.
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  check_json_reader(all);
  if (size > 8) {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < 8; ++i) n |= std::uint64_t(data[i]) << (8 * i);
    check_json_reader(all.substr(8, n));
  }
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = std::byte(data[i]);
  try {
    const auto f = memopt::io::SafetensorsFile::parse(std::move(bytes), "fuzz");
    // Everything a checked file promises must hold: read every tensor it lists.
    for (const auto& t : f.tensors()) {
      const auto b = f.bytes(t);
      if (b.size() != t.end - t.begin) __builtin_trap();
      if (t.dtype == memopt::io::Dtype::f32 || t.dtype == memopt::io::Dtype::f16 ||
          t.dtype == memopt::io::Dtype::bf16) {
        volatile float sink = 0;
        for (float v : f.floats(t.name)) sink = sink + v;
      } else if (t.dtype == memopt::io::Dtype::i64) {
        volatile std::int64_t sink = 0;
        for (std::int64_t v : f.int64s(t.name)) sink = sink ^ v;  // xor: no signed overflow
      }
    }
    volatile std::size_t sink = 0;
    for (const auto& [k, v] : f.metadata()) sink = sink + k.size() + v.size();
  } catch (const memopt::error&) {
    // Refusing bad input is the expected outcome.
  }
  return 0;
}
