#pragma once
// data::from_csv(path, options): a delimited text file of numbers (plain or gzip) read into
// memory once, as rows of features and float targets (tabular regression).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
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

namespace memopt::data {

/// How `from_csv` reads a file.
struct CsvOptions {
  /// Which columns are targets, as 0-based indices in the order the targets take; every other
  /// column is a feature, in file order. Must be empty when the targets are a file of their
  /// own (the two-file `from_csv`).
  std::vector<std::size_t> target_columns = {};
  /// Whether the first line holds column names, which are skipped (not checked).
  bool header = false;
  /// The field separator. A space or a tab means a run of spaces and tabs, with leading and
  /// trailing ones ignored (as NumPy's `loadtxt`); any other character separates fields
  /// exactly once, and spaces around a field are ignored.
  char delimiter = ',';
};

namespace detail {

/// A file's rows of numbers: `rows * columns` values, row-major.
struct CsvTable {
  std::vector<float> values;
  std::size_t rows = 0;
  std::size_t columns = 0;
};

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
        path.string()));
  }
  if (file.trailing_bytes() > 0) {
    throw error(fmt::format(
        "data::from_csv: cannot read '{}': expected the file to end with its gzip stream, found "
        "{} bytes after it",
        path.string(), file.trailing_bytes()));
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

// Appends the fields of `line` to `fields` (cleared first).
inline void split_fields(std::string_view line, char delimiter,
                         std::vector<std::string_view>& fields) {
  fields.clear();
  if (is_blank(delimiter)) {
    line = trim(line);
    while (!line.empty()) {
      const auto end = std::find_if(line.begin(), line.end(), is_blank);
      const auto length = static_cast<std::size_t>(end - line.begin());
      fields.push_back(line.substr(0, length));
      line = trim(line.substr(length));
    }
    return;
  }
  for (;;) {
    const std::size_t at = line.find(delimiter);
    fields.push_back(trim(line.substr(0, at)));
    if (at == std::string_view::npos) return;
    line.remove_prefix(at + 1);
  }
}

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

/// Parses `text` (the contents of `path`) into a table, raising `memopt::error` that names the
/// file, the 1-based line and column on a field that is not a finite number in float's range
/// and on a row whose number of columns differs from the first row's.
inline CsvTable parse_csv(std::string_view text, const std::filesystem::path& path,
                          const CsvOptions& options) {
  CsvTable table;
  std::vector<std::string_view> fields;
  std::size_t line_number = 0;
  std::size_t first_row_line = 0;
  bool header_pending = options.header;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // Windows line ends
    if (trim(line).empty()) continue;  // blank lines, a final one included, carry no row
    if (header_pending) {
      header_pending = false;
      continue;
    }
    split_fields(line, options.delimiter, fields);
    if (table.rows == 0) {
      table.columns = fields.size();
      first_row_line = line_number;
    } else if (fields.size() != table.columns) {
      throw error(
          fmt::format("data::from_csv: '{}', line {}: expected {} columns (as line {}), found {}",
                      path.string(), line_number, table.columns, first_row_line, fields.size()));
    }
    for (std::size_t column = 0; column < fields.size(); ++column) {
      const std::string_view field = fields[column];
      float value = 0;
      const CsvNumber got = parse_field(field, value);
      if (got != CsvNumber::ok) {
        std::string what = fmt::format("expected a number, found '{}'", field);
        if (got == CsvNumber::empty) {
          what = "expected a number, found an empty field";
        } else if (got == CsvNumber::too_large) {
          what = fmt::format(
              "expected a number within float's range (magnitude at most 3.4028235e+38), "
              "found '{}'",
              field);
        } else if (got == CsvNumber::not_finite) {
          what = fmt::format(
              "expected a finite number, found '{}' (a NaN or infinite feature or target "
              "would poison training: fill in or drop it first)",
              field);
        } else if (table.rows == 0 && !options.header) {
          what += " (column names? set .header = true)";
        }
        throw error(fmt::format("data::from_csv: '{}', line {}, column {}: {}", path.string(),
                                line_number, column + 1, what));
      }
      table.values.push_back(value);
    }
    ++table.rows;
  }
  if (table.rows == 0) {
    throw error(
        fmt::format("data::from_csv: '{}': expected rows of numbers, found none", path.string()));
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
/// features. Fields are plain numbers (no quoting); blank lines are skipped. Numbers read as
/// NumPy's `loadtxt` reads float32: the nearest float, so `1e-50` reads 0 and `1e-40` a
/// denormal. Raises `memopt::error` naming the file, line and column on a field that is not a
/// number; on `nan` and `inf` in any spelling, since a NaN or infinite feature or target
/// silently poisons every weight it reaches in training; on a magnitude beyond float's largest
/// (`1e39`), which NumPy would make infinite; and the line on a row with a different number of
/// columns (a ragged row). A target column outside the rows or listed twice, or no target or
/// no feature column left, raise it too.
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
        path.string()));
  }
  std::vector<bool> is_target(columns, false);
  for (const std::size_t c : options.target_columns) {
    if (c >= columns) {
      throw error(fmt::format(
          "data::from_csv: '{}': expected target columns below {} (0-based, the file has {} "
          "columns), found {}",
          path.string(), columns, columns, c));
    }
    if (is_target[c]) {
      throw error(
          fmt::format("data::from_csv: '{}': expected each target column once, found {} "
                      "listed twice",
                      path.string(), c));
    }
    is_target[c] = true;
  }
  const std::size_t target_width = options.target_columns.size();
  const std::size_t width = columns - target_width;
  if (width == 0) {
    throw error(fmt::format(
        "data::from_csv: '{}': expected at least one feature column, found all {} columns "
        "listed as targets",
        path.string(), columns));
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
        features.string(), targets.string(), options.target_columns.size()));
  }
  detail::CsvTable x = detail::read_csv(features, options);
  detail::CsvTable y = detail::read_csv(targets, options);
  if (x.rows != y.rows) {
    throw error(fmt::format(
        "data::from_csv: expected as many rows of targets as of features, found {} in '{}' and "
        "{} in '{}'",
        x.rows, features.string(), y.rows, targets.string()));
  }
  return TargetDataset(std::move(x.values), std::move(y.values), x.columns, y.columns);
}

}  // namespace memopt::data
