#pragma once
// JsonWriter: compact JSON text written value by value, as the safetensors header and the
// memory report need it. Small on purpose: it compiles in a fraction of the time a general
// JSON library takes, and every program that saves a checkpoint includes it.

#include <charconv>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/utf8.hpp"

namespace memopt::io {

/// Builds one JSON text. Objects take `key` before each value; the writer places the commas
/// and colons. Strings must be valid UTF-8 (memopt::error otherwise) and are escaped as
/// RFC 8259 requires; non-ASCII characters are written as they are.
///
/// ```cpp
/// mo::io::JsonWriter w;
/// w.begin_object().key("shape").begin_array().value(2).value(3).end_array().end_object();
/// std::string text = std::move(w).text();  // {"shape":[2,3]}
/// ```
class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  /// The key of the next value in the innermost object.
  JsonWriter& key(std::string_view k) {
    separate();
    quoted(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(std::string_view s) {
    separate();
    quoted(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    separate();
    out_ += b ? "true" : "false";
    return *this;
  }
  template <std::integral I>
  requires(!std::same_as<I, bool> && !std::same_as<I, char>) JsonWriter& value(I v) {
    separate();
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    out_.append(digits, end);
    return *this;
  }
  JsonWriter& null() {
    separate();
    out_ += "null";
    return *this;
  }
  /// Text that is already JSON, such as a number's literal, written as it is.
  JsonWriter& raw(std::string_view json) {
    separate();
    out_ += json;
    return *this;
  }

  /// The text written so far.
  const std::string& text() const& { return out_; }
  std::string text() && { return std::move(out_); }

 private:
  // Before a value or key: a comma unless it is the first in its container, or the value
  // that follows a key.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  JsonWriter& open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    first_.pop_back();
    out_ += c;
    return *this;
  }
  void quoted(std::string_view s) {
    constexpr char hex[] = "0123456789abcdef";
    out_ += '"';
    for (std::size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80) {
        const std::size_t n = detail::utf8_sequence_length(s, i);
        if (n == 0)
          throw error("JSON: expected UTF-8 text, found " + detail::byte_name(c) + " at " +
                      std::to_string(i) + " of a string");
        out_.append(s.substr(i, n));
        i += n;
        continue;
      }
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\b':
          out_ += "\\b";
          break;
        case '\f':
          out_ += "\\f";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (c < 0x20) {
            out_ += "\\u00";
            out_ += hex[c >> 4];
            out_ += hex[c & 0xf];
          } else {
            out_ += static_cast<char>(c);
          }
      }
      ++i;
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace memopt::io
