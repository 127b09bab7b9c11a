// libFuzzer target for the safetensors reader: any bytes must either parse into a file whose
// every tensor can be read, or raise memopt::error. A crash, a sanitizer report, a leak or a
// hang is a bug.
//
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
//     tests/fuzz/fuzz_safetensors.cpp -lfmt -o fuzz_safetensors
//   ./fuzz_safetensors -max_total_time=60 corpus/ tests/fuzz/corpus/
// (scripts/fuzz.sh does this; CTest runs it briefly as fuzz.safetensors.)

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
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
