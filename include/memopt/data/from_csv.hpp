#pragma once
// data::from_csv(path, options): a delimited text file of numbers (plain or gzip) read into
// memory once, as rows of features and float targets (tabular regression).

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/data/target_dataset.hpp"
#include "memopt/io/detail/gz_file.hpp"
#include "memopt/io/detail/utf8.hpp"

namespace memopt::data {

/// How `from_csv` reads a file.
struct CsvOptions {
  /// Which columns are targets, as 0-based indices in the order the targets take; every other
  /// column is a feature, in file order. Must be empty when the targets are a file of their
  /// own (the two-file `from_csv`).
  std::vector<std::size_t> target_columns = {};
  /// Whether the first record holds column names, which are skipped (not checked); quoted
  /// names may hold the delimiter, quotes and line breaks.
  bool header = false;
  /// The field separator. A space or a tab means a run of spaces and tabs, with leading and
  /// trailing ones ignored (as NumPy's `loadtxt`); any other character separates fields
  /// exactly once, and spaces around a field are ignored. A double quote or a line end
  /// cannot be one.
  char delimiter = ',';
};

namespace detail {

/// A file's rows of numbers: `rows * columns` values, row-major.
struct CsvTable {
  std::vector<float> values;
  std::size_t rows = 0;
  std::size_t columns = 0;
};

// Characters a terminal would not show as themselves, or would use to reorder or hide the
// text around them: C1 controls, no-break and zero-width spaces, the soft hyphen,
// bidirectional controls, line separators, the byte order mark.
constexpr bool is_invisible(char32_t c) noexcept {
  return (c >= 0x80 && c <= 0xa0) || c == 0xad || (c >= 0x200b && c <= 0x200f) ||
         (c >= 0x2028 && c <= 0x202f) || (c >= 0x2060 && c <= 0x2064) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

/// `text` as printable UTF-8 for a message, whatever bytes the file held: well-formed UTF-8
/// stays as it is, except control and invisible characters (`\t`, `\x1b`, `\u0085`,
/// `\u00a0`, `\ufeff`); bytes that are not UTF-8 read `\xe9`; with `escape_backslash`, a
/// backslash reads `\\`, so that an escape is never mistaken for the file's text. Text longer
/// than `limit` bytes is cut there, followed by `...`.
///
/// ```cpp
/// mo::data::detail::printable("caf\xe9\x1b[0m", 64, true);  // "caf\\xe9\\x1b[0m"
/// ```
inline std::string printable(std::string_view text, std::size_t limit, bool escape_backslash) {
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && i < limit) {
    const std::size_t n = io::detail::utf8_sequence_length(text, i);
    const auto lead = static_cast<unsigned char>(text[i]);
    if (n == 0) {  // not UTF-8 (Latin-1, say): the byte's value
      out += {'\\', 'x', hex[lead >> 4], hex[lead & 0xf]};
      ++i;
      continue;
    }
    char32_t c = n == 1 ? lead : lead & (0x7fu >> n);
    for (std::size_t k = 1; k < n; ++k)
      c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3fu);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += {'\\', 'x', hex[c >> 4], hex[c & 0xf]};
    } else if (is_invisible(c)) {
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(c));
    } else if (c == '\\' && escape_backslash) {
      out += "\\\\";
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  if (i < text.size()) out += "...";
  return out;
}

/// A file's name as messages show it: printable, backslashes (Windows' separators) kept.
inline std::string shown(const std::filesystem::path& path) {
  return printable(path.string(), std::string::npos, false);
}

inline std::string read_whole_file(const std::filesystem::path& path) {
  io::detail::GzFile file(path, "data::from_csv");
  std::string text;
  std::size_t got = 0;
  do {
    const std::size_t at = text.size();
    text.resize(at + (std::size_t{1} << 16));
    got = file.read(text.data() + at, std::size_t{1} << 16);
    text.resize(at + got);
  } while (got > 0);
  if (file.cut_short()) {
    throw error(fmt::format(
        "data::from_csv: cannot read '{}': expected a complete gzip stream, found one cut short",
        shown(path)));
  }
  if (file.trailing_bytes() > 0) {
    throw error(fmt::format(
        "data::from_csv: cannot read '{}': expected the file to end with its gzip stream, found "
        "{} bytes after it",
        shown(path), file.trailing_bytes()));
  }
  return text;
}

inline bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t';
}

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

/// One field: its value (unquoted, blanks around it trimmed) and its text as in the file.
struct CsvField {
  std::string_view value;
  std::string_view raw;
  std::size_t line = 0;  // 1-based, where the field starts
};

/// Splits delimited text into records and fields in one pass, as Python's `csv` module does
/// (RFC 4180): a field that starts with `"` (after blanks) is quoted, may hold the delimiter
/// and line breaks, and `""` inside it stands for one `"`; text after the closing quote joins
/// the field. Line ends are `\n`, `\r\n` or a lone `\r`. A field's value is a view into the
/// text, or into one buffer reused by every quoted field that needs unescaping, valid until
/// the next `next_field`.
class CsvTokenizer {
 public:
  CsvTokenizer(std::string_view text, char delimiter, const std::filesystem::path& path)
      : text_(text), delimiter_(delimiter), blank_delimited_(is_blank(delimiter)), path_(path) {
    for (const char c : {'\n', '\r'}) ends_field_[static_cast<unsigned char>(c)] = true;
    if (blank_delimited_) {
      for (const char c : {' ', '\t'}) ends_field_[static_cast<unsigned char>(c)] = true;
    } else {
      ends_field_[static_cast<unsigned char>(delimiter)] = true;
    }
  }

  /// Moves to the next record, past blank lines; false at the end of the text.
  bool next_record() {
    for (;;) {
      skip_blanks();
      if (at_ == text_.size()) return false;
      if (text_[at_] != '\n' && text_[at_] != '\r') return true;
      end_line();
    }
  }

  /// Reads the record's next field (the `column`th, 1-based, for messages) into `field`;
  /// returns whether another field follows in the same record.
  bool next_field(CsvField& field, std::size_t column) {
    skip_blanks();
    const std::size_t start = at_;
    field.line = line_;
    const bool quoted = at_ < text_.size() && text_[at_] == '"';
    if (quoted)
      field.value = read_quoted(column);
    else
      skip_to_field_end();
    // Leading blanks are behind `start` already.
    field.raw = text_.substr(start, at_ - start);
    while (!field.raw.empty() && is_blank(field.raw.back())) field.raw.remove_suffix(1);
    if (!quoted) field.value = field.raw;
    if (blank_delimited_) {
      skip_blanks();
      if (at_ < text_.size() && text_[at_] != '\n' && text_[at_] != '\r') return true;
    } else if (at_ < text_.size() && text_[at_] == delimiter_) {
      ++at_;
      return true;
    }
    end_line();
    return false;
  }

  /// The 1-based line the tokenizer is on: a record's first after `next_record`.
  std::size_t line() const noexcept { return line_; }

 private:
  bool ends_field(char c) const noexcept { return ends_field_[static_cast<unsigned char>(c)]; }
  void skip_blanks() noexcept {
    while (at_ < text_.size() && is_blank(text_[at_])) ++at_;
  }
  void skip_to_field_end() noexcept {
    // The hot loop: locals, so that the compiler keeps the position in a register.
    const char* p = text_.data() + at_;
    const char* const end = text_.data() + text_.size();
    while (p != end && !ends_field(*p)) ++p;
    at_ = static_cast<std::size_t>(p - text_.data());
  }
  // Steps over the line end at `at_` (`\n`, `\r\n` or `\r`), if any.
  void end_line() noexcept {
    if (at_ == text_.size()) return;
    if (text_[at_] == '\r' && at_ + 1 < text_.size() && text_[at_ + 1] == '\n') ++at_;
    ++at_;
    ++line_;
  }

  std::string_view read_quoted(std::size_t column) {
    const std::size_t open_line = line_;
    std::size_t piece = ++at_;  // past the opening quote
    bool buffered = false;      // whether the value so far is in buffer_ (a `""` was seen)
    for (;;) {
      if (at_ == text_.size()) {
        throw error(fmt::format(
            "data::from_csv: '{}', line {}, column {}: expected a closing quote for the field "
            "that opens there, found the end of the file",
            shown(path_), open_line, column));
      }
      const char c = text_[at_];
      if (c == '"') {
        if (at_ + 1 == text_.size() || text_[at_ + 1] != '"') break;
        if (!buffered) buffer_.clear();
        buffer_.append(text_.substr(piece, at_ - piece + 1));  // through the first quote
        buffered = true;
        at_ += 2;
        piece = at_;
        continue;
      }
      if (c == '\n' || (c == '\r' && (at_ + 1 == text_.size() || text_[at_ + 1] != '\n'))) {
        ++line_;
      }
      ++at_;
    }
    const std::string_view inside = text_.substr(piece, at_ - piece);
    const std::size_t after = ++at_;  // past the closing quote
    skip_to_field_end();
    std::string_view rest = text_.substr(after, at_ - after);
    while (!rest.empty() && is_blank(rest.back())) rest.remove_suffix(1);
    if (!buffered && rest.empty()) return trim(inside);
    if (!buffered) buffer_.clear();
    buffer_.append(inside);
    buffer_.append(rest);
    return trim(buffer_);
  }

  std::string_view text_;
  std::size_t at_ = 0;
  std::size_t line_ = 1;
  char delimiter_;
  bool blank_delimited_;
  std::array<bool, 256> ends_field_{};  // line ends and the delimiter (blanks, if it is one)
  const std::filesystem::path& path_;
  std::string buffer_;
};

/// Whether the magnitude of `number` (a nonzero decimal that `from_chars` matched whole) is
/// below 1: its leading digit's place plus its exponent, which may be far outside any
/// floating-point type's range.
inline bool magnitude_below_one(std::string_view number) noexcept {
  std::size_t i = number.front() == '-' ? 1 : 0;
  long long place = 0;  // of the leading nonzero digit: 0 for units, -1 for tenths
  bool found = false;
  bool fraction = false;
  for (; i < number.size() && number[i] != 'e' && number[i] != 'E'; ++i) {
    if (number[i] == '.') {
      fraction = true;
    } else if (fraction) {
      if (!found) --place;
      found = found || number[i] != '0';
    } else if (found) {
      ++place;
    } else {
      found = number[i] != '0';
    }
  }
  long long exponent = 0;
  if (i < number.size()) {
    const bool negative = number[++i] == '-';
    if (number[i] == '-' || number[i] == '+') ++i;
    constexpr long long cap = 1'000'000'000'000;  // far beyond any place a field can give
    for (; i < number.size(); ++i) exponent = std::min(cap, exponent * 10 + (number[i] - '0'));
    if (negative) exponent = -exponent;
  }
  return place + exponent < 0;
}

enum class CsvNumber { ok, empty, not_a_number, not_finite, too_large };

/// Reads `field` as NumPy's `loadtxt` reads a float32: the nearest float, 0 (signed) or a
/// denormal for a magnitude below float's range. A magnitude beyond it, `nan` and `inf`
/// are refused rather than made infinite.
inline CsvNumber parse_field(std::string_view field, float& value) noexcept {
  if (field.empty()) return CsvNumber::empty;
  // from_chars takes no leading '+', which other writers emit.
  if (field.size() > 1 && field.front() == '+' && field[1] != '-') field.remove_prefix(1);
  const char* end = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(field.data(), end, value);
  if (ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return CsvNumber::not_a_number;
  }
  if (ec == std::errc::result_out_of_range) {
    // The nearest float is 0 or beyond the largest; from_chars leaves `value` as it was.
    if (!magnitude_below_one(field)) return CsvNumber::too_large;
    value = field.front() == '-' ? -0.0f : 0.0f;
    return CsvNumber::ok;
  }
  return std::isfinite(value) ? CsvNumber::ok : CsvNumber::not_finite;
}

/// Raises the error for `field`, the `column`th of its row, which `parse_field` refused:
/// with a reason when the field is empty because the line ends with the delimiter
/// (`trailing`), or looks like a column name in the first row of a file read without header.
[[noreturn]] inline void refuse_field(const std::filesystem::path& path, const CsvField& field,
                                      std::size_t column, CsvNumber got, bool trailing,
                                      bool first_row) {
  constexpr std::size_t limit = 64;
  const std::string found =
      fmt::format("'{}'{}", printable(field.raw, limit, true),
                  field.raw.size() > limit ? fmt::format(" ({} bytes)", field.raw.size()) : "");
  std::string what;
  switch (got) {
    case CsvNumber::empty:
      what = "expected a number, found an empty field";
      if (trailing) {
        what +=
            " (the line ends with the delimiter, which opens an empty last column, as "
            "pandas and NumPy read it)";
      }
      break;
    case CsvNumber::too_large:
      what = "expected a number within float's range (magnitude at most 3.4028235e+38), found " +
             found;
      break;
    case CsvNumber::not_finite:
      what = "expected a finite number, found " + found +
             " (a NaN or infinite feature or target would poison training: fill in or drop it "
             "first)";
      break;
    default: {
      what = "expected a number, found " + found;
      const auto c = static_cast<unsigned char>(field.value.empty() ? 0 : field.value[0]);
      if (first_row && (((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_' || c >= 0x80)) {
        what += " (column names? set .header = true)";
      }
    }
  }
  throw error(fmt::format("data::from_csv: '{}', line {}, column {}: {}", shown(path), field.line,
                          column, what));
}

/// Parses `text` (the contents of `path`) into a table in one pass, raising `memopt::error`
/// that names the file, the 1-based line and column and the field's text (escaped) on a field
/// that is not a finite number in float's range, and the line on a row whose number of
/// columns differs from the first row's.
inline CsvTable parse_csv(std::string_view text, const std::filesystem::path& path,
                          const CsvOptions& options) {
  const char delimiter = options.delimiter;
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r') {
    throw error(fmt::format(
        "data::from_csv: '{}': expected a delimiter other than a double quote or a line end, "
        "found '{}'",
        shown(path), printable(std::string_view(&delimiter, 1), 1, true)));
  }
  // A byte order mark, as Excel writes one: UTF-8's is skipped, UTF-16's refused.
  if (text.starts_with("\xef\xbb\xbf")) {
    text.remove_prefix(3);
  } else if (text.starts_with("\xff\xfe") || text.starts_with("\xfe\xff")) {
    throw error(fmt::format(
        "data::from_csv: '{}': expected UTF-8 or ASCII text, found UTF-16 (a byte order mark "
        "{}); save the file as UTF-8",
        shown(path), text[0] == '\xff' ? "FF FE" : "FE FF"));
  }
  CsvTokenizer tokens(text, delimiter, path);
  CsvField field;
  if (options.header && tokens.next_record()) {  // names, read past but not checked
    std::size_t column = 1;
    while (tokens.next_field(field, column)) ++column;
  }
  CsvTable table;
  std::size_t first_row_line = 0;
  while (tokens.next_record()) {
    const std::size_t line = tokens.line();
    std::size_t columns = 0;
    bool more = true;
    while (more) {
      more = tokens.next_field(field, columns + 1);
      ++columns;
      if (table.rows > 0 && columns > table.columns) continue;  // a ragged row, refused below
      float value = 0;
      const CsvNumber got = parse_field(field.value, value);
      if (got != CsvNumber::ok) {
        refuse_field(path, field, columns, got, !more && columns > 1 && field.raw.empty(),
                     table.rows == 0 && !options.header);
      }
      table.values.push_back(value);
    }
    if (table.rows == 0) {
      table.columns = columns;
      first_row_line = line;
    } else if (columns != table.columns) {
      throw error(
          fmt::format("data::from_csv: '{}', line {}: expected {} columns (as line {}), found {}{}",
                      shown(path), line, table.columns, first_row_line, columns,
                      columns > 1 && field.raw.empty()
                          ? " (the line ends with the delimiter, which opens an empty last column)"
                          : ""));
    }
    ++table.rows;
  }
  if (table.rows == 0) {
    throw error(
        fmt::format("data::from_csv: '{}': expected rows of numbers, found none", shown(path)));
  }
  return table;
}

inline CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options) {
  return parse_csv(read_whole_file(path), path, options);
}

}  // namespace detail

/// Reads a delimited text file of numbers (CSV; gzip-compressed when it starts with gzip's
/// magic bytes, whatever its name) into memory once, as a `TargetDataset`: the columns listed
/// in `options.target_columns` are each row's targets, in that order, the others its
/// features.
///
/// The text is read as Python's `csv` module reads it: a UTF-8 byte order mark is skipped;
/// lines end with `\n`, `\r\n` or `\r`; a field in double quotes (`"1.5"`) may hold the
/// delimiter, line breaks and `""` for a quote; blank lines are skipped. A delimiter at the end
/// of a line opens an empty last column, as in pandas and NumPy, which is refused as any empty
/// field is. Numbers read as NumPy's `loadtxt` reads float32: the nearest float, so `1e-50`
/// reads 0 and `1e-40` a denormal. Refused, with `memopt::error` naming the file, line, column
/// and the field's text (control and non-UTF-8 bytes escaped, as `\x1b` and `\xe9`): a field
/// that is not a number; `nan` and `inf` in any spelling, since a NaN or infinite feature or
/// target silently poisons every weight it reaches in training; a magnitude beyond float's
/// largest (`1e39`), which NumPy would make infinite. A row with a different number of columns
/// (a ragged row), a target column outside the rows or listed twice, no target or no feature
/// column left, and a UTF-16 file raise it too.
///
/// ```cpp
/// auto houses = mo::data::from_csv("houses.csv", {.target_columns = {8}, .header = true});
/// auto batches = houses | mo::data::shuffle(houses.size(), 1) | mo::data::batch(32);
/// ```
inline TargetDataset from_csv(const std::filesystem::path& path, const CsvOptions& options) {
  const detail::CsvTable table = detail::read_csv(path, options);
  const std::size_t columns = table.columns;
  if (options.target_columns.empty()) {
    throw error(fmt::format(
        "data::from_csv: '{}': expected at least one target column in .target_columns, found "
        "none (for targets in a file of their own, use from_csv(features, targets, options))",
        detail::shown(path)));
  }
  std::vector<bool> is_target(columns, false);
  for (const std::size_t c : options.target_columns) {
    if (c >= columns) {
      throw error(fmt::format(
          "data::from_csv: '{}': expected target columns below {} (0-based, the file has {} "
          "columns), found {}",
          detail::shown(path), columns, columns, c));
    }
    if (is_target[c]) {
      throw error(
          fmt::format("data::from_csv: '{}': expected each target column once, found {} "
                      "listed twice",
                      detail::shown(path), c));
    }
    is_target[c] = true;
  }
  const std::size_t target_width = options.target_columns.size();
  const std::size_t width = columns - target_width;
  if (width == 0) {
    throw error(fmt::format(
        "data::from_csv: '{}': expected at least one feature column, found all {} columns "
        "listed as targets",
        detail::shown(path), columns));
  }
  std::vector<float> features;
  std::vector<float> targets;
  features.reserve(table.rows * width);
  targets.reserve(table.rows * target_width);
  for (std::size_t r = 0; r < table.rows; ++r) {
    const float* row = table.values.data() + r * columns;
    for (std::size_t c = 0; c < columns; ++c)
      if (!is_target[c]) features.push_back(row[c]);
    for (const std::size_t c : options.target_columns) targets.push_back(row[c]);
  }
  return TargetDataset(std::move(features), std::move(targets), width, target_width);
}

/// Features and targets from two files of as many rows (as scikit-learn ships some data sets,
/// e.g. `diabetes_data_raw.csv.gz` and `diabetes_target.csv.gz`): every column of `features`
/// is a feature, every column of `targets` a target. `options` applies to both files and its
/// `target_columns` must be empty. Raises `memopt::error` as the one-file form does, and when
/// the files' row counts differ.
///
/// ```cpp
/// auto diabetes = mo::data::from_csv("diabetes_data_raw.csv.gz", "diabetes_target.csv.gz",
///                                    {.delimiter = ' '});  // 442 rows, 10 features, 1 target
/// ```
inline TargetDataset from_csv(const std::filesystem::path& features,
                              const std::filesystem::path& targets, const CsvOptions& options) {
  if (!options.target_columns.empty()) {
    throw error(fmt::format(
        "data::from_csv: '{}' and '{}': expected no .target_columns (every column of the second "
        "file is a target), found {}",
        detail::shown(features), detail::shown(targets), options.target_columns.size()));
  }
  detail::CsvTable x = detail::read_csv(features, options);
  detail::CsvTable y = detail::read_csv(targets, options);
  if (x.rows != y.rows) {
    throw error(fmt::format(
        "data::from_csv: expected as many rows of targets as of features, found {} in '{}' and "
        "{} in '{}'",
        x.rows, detail::shown(features), y.rows, detail::shown(targets)));
  }
  return TargetDataset(std::move(x.values), std::move(y.values), x.columns, y.columns);
}

}  // namespace memopt::data
