#pragma once
// JsonValue and parse_json: JSON text (RFC 8259) read into a small tree, strictly. Made for
// input memopt does not trust, such as a safetensors header: the grammar is checked to the
// byte, strings must be UTF-8, a key given twice in one object is refused (most parsers keep
// the last, which would let a file hide an entry), and nesting is limited so that no input
// can exhaust the stack.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/utf8.hpp"
#include "memopt/io/json_writer.hpp"

namespace memopt::io {

enum class JsonKind : std::uint8_t { null, boolean, number, string, array, object };

struct JsonMember;

/// One parsed JSON value. A string holds its unescaped text; a number its literal as
/// written (read it with `as_unsigned`); an array its `items`; an object its `members` in
/// the order of the text.
///
/// ```cpp
/// mo::io::JsonValue v = mo::io::parse_json(R"({"shape": [2, 3]})");
/// std::uint64_t rows = *v.find("shape")->items[0].as_unsigned();  // 2
/// ```
struct JsonValue {
  JsonKind kind = JsonKind::null;
  std::string text;  // a string's value, a number's literal, "true" or "false"
  std::vector<JsonValue> items;
  std::vector<JsonMember> members;

  bool is_object() const { return kind == JsonKind::object; }
  bool is_array() const { return kind == JsonKind::array; }
  bool is_string() const { return kind == JsonKind::string; }

  /// The member called `key` of an object, or null.
  const JsonValue* find(std::string_view key) const;
  /// The value of a number written as a non-negative integer that fits 64 bits, or nothing.
  std::optional<std::uint64_t> as_unsigned() const;
  /// "null", "boolean", "number", "string", "array" or "object".
  std::string_view type_name() const;
  /// The value as compact JSON text, for messages.
  std::string dump() const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

/// Raised by parse_json; `offset` is the byte at which the text stopped being JSON.
class JsonError : public error {
 public:
  JsonError(std::size_t offset, const std::string& what)
      : error("at byte " + std::to_string(offset) + ": " + what), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

/// What parse_json may build from text it does not trust. The tree takes about 90 bytes a
/// value (more while a vector grows), so a text of 2-byte values such as `[0,0,0,...]`
/// would need about 45 times its length: `max_values` bounds that.
struct JsonLimits {
  std::size_t max_values = static_cast<std::size_t>(-1);  // arrays, objects and their contents
};

namespace detail {

// Recursive descent over the text. Deeper nesting than this is refused, not followed.
inline constexpr int max_json_depth = 256;

class JsonParser {
 public:
  JsonParser(std::string_view text, JsonLimits limits) : s_(text), limits_(limits) {}

  JsonValue document() {
    skip_space();
    JsonValue v = value(0);
    skip_space();
    if (i_ != s_.size()) fail("expected the end of the text, found " + here());
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw JsonError(i_, what); }

  std::string here() const {
    if (i_ >= s_.size()) return "the end of the text";
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c >= 0x20 && c < 0x7f) return "'" + std::string(1, static_cast<char>(c)) + "'";
    return byte_name(c);
  }

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  bool take(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  JsonValue value(int depth) {
    if (depth >= max_json_depth)
      fail("expected at most " + std::to_string(max_json_depth) + " levels of nesting");
    if (values_++ == limits_.max_values)
      fail("expected at most " + std::to_string(limits_.max_values) +
           " values (arrays, objects and everything in them)");
    if (i_ >= s_.size()) fail("expected a value, found the end of the text");
    JsonValue v;
    switch (s_[i_]) {
      case '{':
        object(v, depth);
        break;
      case '[':
        array(v, depth);
        break;
      case '"':
        v.kind = JsonKind::string;
        v.text = string();
        break;
      case 't':
        literal(v, "true", JsonKind::boolean);
        break;
      case 'f':
        literal(v, "false", JsonKind::boolean);
        break;
      case 'n':
        literal(v, "null", JsonKind::null);
        break;
      default:
        number(v);
    }
    return v;
  }

  void literal(JsonValue& v, std::string_view word, JsonKind kind) {
    if (s_.substr(i_, word.size()) != word)
      fail("expected a value (" + std::string(word) + "?), found " + here());
    i_ += word.size();
    v.kind = kind;
    if (kind == JsonKind::boolean) v.text = word;
  }

  void object(JsonValue& v, int depth) {
    v.kind = JsonKind::object;
    ++i_;  // '{'
    skip_space();
    if (take('}')) return;
    for (;;) {
      if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string key, found " + here());
      std::string key = string();
      skip_space();
      if (!take(':')) fail("expected ':' after a key, found " + here());
      skip_space();
      JsonValue member = value(depth + 1);
      v.members.push_back({std::move(key), std::move(member)});
      skip_space();
      if (take('}')) break;
      if (!take(',')) fail("expected ',' or '}' in an object, found " + here());
      skip_space();
    }
    // Sorted views of the keys find a repeat in n log n, whatever the object's size.
    std::vector<std::string_view> keys;
    keys.reserve(v.members.size());
    for (const JsonMember& m : v.members) keys.emplace_back(m.key);
    std::ranges::sort(keys);
    if (const auto twice = std::ranges::adjacent_find(keys); twice != keys.end())
      fail("expected unique keys in an object, found \"" + std::string(*twice) + "\" twice");
  }

  void array(JsonValue& v, int depth) {
    v.kind = JsonKind::array;
    ++i_;  // '['
    skip_space();
    if (take(']')) return;
    for (;;) {
      v.items.push_back(value(depth + 1));
      skip_space();
      if (take(']')) break;
      if (!take(',')) fail("expected ',' or ']' in an array, found " + here());
      skip_space();
    }
  }

  bool digit() const { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; }

  void number(JsonValue& v) {
    const std::size_t start = i_;
    take('-');
    if (!digit()) fail("expected a value, found " + here());
    if (!take('0'))
      while (digit()) ++i_;
    if (take('.')) {
      if (!digit()) fail("expected a digit after '.', found " + here());
      while (digit()) ++i_;
    }
    if (take('e') || take('E')) {
      if (!take('+')) take('-');
      if (!digit()) fail("expected a digit in the exponent, found " + here());
      while (digit()) ++i_;
    }
    v.kind = JsonKind::number;
    v.text = s_.substr(start, i_ - start);
  }

  unsigned hex4() {
    unsigned u = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      if (i_ >= s_.size()) fail("expected 4 hexadecimal digits after \\u, found the end");
      const char c = s_[i_];
      const unsigned d = c >= '0' && c <= '9'   ? unsigned(c - '0')
                         : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                                : 16u;
      if (d == 16) fail("expected 4 hexadecimal digits after \\u, found " + here());
      u = u * 16 + d;
    }
    return u;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    const auto put = [&](unsigned b) { out += static_cast<char>(b); };
    if (cp < 0x80) {
      put(cp);
    } else if (cp < 0x800) {
      put(0xc0 | (cp >> 6));
      put(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      put(0xe0 | (cp >> 12));
      put(0x80 | ((cp >> 6) & 0x3f));
      put(0x80 | (cp & 0x3f));
    } else {
      put(0xf0 | (cp >> 18));
      put(0x80 | ((cp >> 12) & 0x3f));
      put(0x80 | ((cp >> 6) & 0x3f));
      put(0x80 | (cp & 0x3f));
    }
  }

  // A string from its opening quote: escapes decoded, raw bytes checked as UTF-8.
  std::string string() {
    ++i_;  // '"'
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("expected '\"' to end a string, found the end of the text");
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) fail("expected a control character in a string to be escaped, found " + here());
      if (c >= 0x80) {
        const std::size_t n = utf8_sequence_length(s_, i_);
        if (n == 0) fail("expected UTF-8 text in a string, found " + here());
        out.append(s_.substr(i_, n));
        i_ += n;
        continue;
      }
      ++i_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) fail("expected an escape after '\\', found the end of the text");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("expected a high surrogate before a low one");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            // A character beyond U+FFFF: a high surrogate must be followed by a low one.
            if (!(take('\\') && take('u')))
              fail("expected \\u and a low surrogate after a high one, found " + here());
            const unsigned low = hex4();
            if (low < 0xdc00 || low > 0xdfff)
              fail("expected a low surrogate (\\uDC00 to \\uDFFF) after a high one");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --i_;
          fail("expected an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u), found " + here());
      }
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::size_t values_ = 0;  // begun so far
  JsonLimits limits_;
};

inline void write_json(JsonWriter& w, const JsonValue& v) {
  switch (v.kind) {
    case JsonKind::null:
      w.null();
      break;
    case JsonKind::boolean:
    case JsonKind::number:
      w.raw(v.text);
      break;
    case JsonKind::string:
      w.value(v.text);
      break;
    case JsonKind::array:
      w.begin_array();
      for (const JsonValue& item : v.items) write_json(w, item);
      w.end_array();
      break;
    case JsonKind::object:
      w.begin_object();
      for (const JsonMember& m : v.members) {
        w.key(m.key);
        write_json(w, m.value);
      }
      w.end_object();
      break;
  }
}

}  // namespace detail

/// Parses `text` as one JSON value; raises JsonError (a memopt::error) saying where and why
/// it is not JSON, or not JSON memopt accepts (a repeated key, too deep, more values than
/// `limits` allow).
inline JsonValue parse_json(std::string_view text, JsonLimits limits = {}) {
  return detail::JsonParser(text, limits).document();
}

inline const JsonValue* JsonValue::find(std::string_view key) const {
  for (const JsonMember& m : members)
    if (m.key == key) return &m.value;
  return nullptr;
}

inline std::optional<std::uint64_t> JsonValue::as_unsigned() const {
  if (kind != JsonKind::number || text.empty() || text[0] == '-' ||
      text.find_first_of(".eE") != std::string::npos)
    return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : text) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

inline std::string_view JsonValue::type_name() const {
  constexpr std::string_view names[] = {"null", "boolean", "number", "string", "array", "object"};
  return names[static_cast<std::size_t>(kind)];
}

inline std::string JsonValue::dump() const {
  JsonWriter w;
  detail::write_json(w, *this);
  return std::move(w).text();
}

}  // namespace memopt::io
