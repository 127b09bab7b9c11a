#pragma once
// detail::ProtoWriter: just enough of the protobuf wire format to write TensorBoard's event
// messages (Event, Summary, HistogramProto, TensorProto): varints, 64- and 32-bit fixed
// fields, length-delimited fields and nested messages. Writing these few message types by
// hand keeps libprotobuf (and its generated code, and its version skew with the Python
// reader) out of the build; the tests check the bytes against the wire format's own examples
// and TensorBoard's reader reads the files.

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace memopt::io::detail {

/// Appends fields to a serialized message. Field numbers are the .proto file's.
///
/// ```cpp
/// mo::io::detail::ProtoWriter m;
/// m.varint(1, 150);  // bytes 08 96 01
/// mo::io::detail::ProtoWriter outer;
/// outer.message(3, m);  // bytes 1a 03 08 96 01
/// ```
class ProtoWriter {
 public:
  enum class Wire : std::uint32_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

  /// int32, int64, uint64, bool and enum fields. Negative values take ten bytes, as protobuf
  /// writes them (sign-extended to 64 bits).
  ProtoWriter& varint(std::uint32_t field, std::int64_t value) {
    key(field, Wire::varint);
    raw_varint(static_cast<std::uint64_t>(value));
    return *this;
  }
  ProtoWriter& fixed64(std::uint32_t field, std::uint64_t value) {
    key(field, Wire::fixed64);
    raw_fixed(value, 8);
    return *this;
  }
  ProtoWriter& fixed32(std::uint32_t field, std::uint32_t value) {
    key(field, Wire::fixed32);
    raw_fixed(value, 4);
    return *this;
  }
  ProtoWriter& float64(std::uint32_t field, double value) {
    return fixed64(field, std::bit_cast<std::uint64_t>(value));
  }
  ProtoWriter& float32(std::uint32_t field, float value) {
    return fixed32(field, std::bit_cast<std::uint32_t>(value));
  }
  /// string and bytes fields.
  ProtoWriter& bytes(std::uint32_t field, std::string_view value) {
    key(field, Wire::length);
    raw_varint(value.size());
    out_.append(value);
    return *this;
  }
  ProtoWriter& message(std::uint32_t field, const ProtoWriter& m) { return bytes(field, m.out_); }
  /// `repeated double` in packed form (proto3's default for numbers).
  ProtoWriter& packed_doubles(std::uint32_t field, std::span<const double> values) {
    if (values.empty()) return *this;  // proto3 writes nothing for an empty repeated field
    key(field, Wire::length);
    raw_varint(values.size() * 8);
    for (const double v : values) raw_fixed(std::bit_cast<std::uint64_t>(v), 8);
    return *this;
  }

  const std::string& str() const { return out_; }

 private:
  void key(std::uint32_t field, Wire w) {
    raw_varint((std::uint64_t{field} << 3) | static_cast<std::uint32_t>(w));
  }
  void raw_varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_ += static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    out_ += static_cast<char>(v);
  }
  // Little-endian, whatever the host's order.
  void raw_fixed(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xFF);
  }

  std::string out_;
};

}  // namespace memopt::io::detail
