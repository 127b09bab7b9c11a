// data::from_csv: delimited files of numbers, plain and gzip, as rows of features and targets.

#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/from_csv.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/io/detail/utf8.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

void write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb");
  REQUIRE(out != nullptr);
  REQUIRE(gzwrite(out, text.data(), static_cast<unsigned>(text.size())) ==
          static_cast<int>(text.size()));
  REQUIRE(gzclose(out) == Z_OK);
}

std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (const mo::error& e) {
    return e.what();
  }
  return "(no memopt::error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<float> values(std::span<const float> s) {
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("from_csv: target columns are split from the features, in the order listed") {
  mo::testing::TempDir dir;
  // A header, spaces around fields, a leading '+', an exponent, CRLF line ends, a blank line.
  write_text(dir / "t.csv",
             "price,rooms,area,age\r\n"
             "250.5, 3 ,+82.25,12\r\n"
             "\r\n"
             "1.9e2,2,61.5,-4\r\n");
  const auto ds = mo::data::from_csv(dir / "t.csv", {.target_columns = {3, 0}, .header = true});
  CHECK(ds.size() == 2);
  CHECK(ds.width() == 2);
  CHECK(ds.target_width() == 2);
  CHECK(values(ds.features()) == std::vector<float>{3.f, 82.25f, 2.f, 61.5f});
  CHECK(values(ds.targets()) == std::vector<float>{12.f, 250.5f, -4.f, 190.f});
  CHECK(values(ds[1].features) == std::vector<float>{2.f, 61.5f});
  CHECK(values(ds[1].targets) == std::vector<float>{-4.f, 190.f});
}

TEST_CASE("from_csv: a space delimiter takes runs of blanks, as the diabetes files use") {
  mo::testing::TempDir dir;
  write_text(dir / "s.txt", "  1.5 2\t\t3.25 7\n4 5  6 8.5   \n");
  const auto ds = mo::data::from_csv(dir / "s.txt", {.target_columns = {3}, .delimiter = ' '});
  CHECK(values(ds.features()) == std::vector<float>{1.5f, 2.f, 3.25f, 4.f, 5.f, 6.f});
  CHECK(values(ds.targets()) == std::vector<float>{7.f, 8.5f});
  // Another delimiter: ';' separates exactly once per field.
  write_text(dir / "semi.csv", "1;2.5;3\n4;5.5;6\n");
  const auto semi = mo::data::from_csv(dir / "semi.csv", {.target_columns = {1}, .delimiter = ';'});
  CHECK(values(semi.features()) == std::vector<float>{1.f, 3.f, 4.f, 6.f});
  CHECK(values(semi.targets()) == std::vector<float>{2.5f, 5.5f});
}

TEST_CASE("from_csv: gzip files are read, and two files join as features and targets") {
  mo::testing::TempDir dir;
  // As scikit-learn ships diabetes: features and the target in two space-separated gzip files.
  write_gzip(dir / "x.csv.gz", "59 2 32.1\n48 1 21.6\n72 2 30.5\n");
  write_gzip(dir / "y.csv.gz", "1.510000000000000000e+02\n7.5e+01\n1.41e+02\n");
  const auto ds = mo::data::from_csv(dir / "x.csv.gz", dir / "y.csv.gz", {.delimiter = ' '});
  CHECK(ds.size() == 3);
  CHECK(ds.width() == 3);
  CHECK(ds.target_width() == 1);
  CHECK(values(ds[2].features) == std::vector<float>{72.f, 2.f, 30.5f});
  CHECK(values(ds.targets()) == std::vector<float>{151.f, 75.f, 141.f});

  // One gzip file with a target column.
  write_gzip(dir / "one.csv.gz", "a,b\n1.5,2.5\n3.5,4.5\n");
  const auto one = mo::data::from_csv(dir / "one.csv.gz", {.target_columns = {1}, .header = true});
  CHECK(values(one.features()) == std::vector<float>{1.5f, 3.5f});
  CHECK(values(one.targets()) == std::vector<float>{2.5f, 4.5f});
}

TEST_CASE("from_csv: the rows feed shuffle and batch as TargetSample") {
  mo::testing::TempDir dir;
  std::string text;
  for (int i = 1; i <= 10; ++i)
    text += std::to_string(i) + "," + std::to_string(i * 10) + "," + std::to_string(i) + ".5\n";
  write_text(dir / "r.csv", text);
  const auto ds = mo::data::from_csv(dir / "r.csv", {.target_columns = {2}});
  std::vector<std::size_t> sizes;
  float target_sum = 0;
  for (const auto& b : ds | mo::data::shuffle(10, 3) | mo::data::batch(4)) {
    sizes.push_back(b.size());
    for (std::size_t r = 0; r < b.size(); ++r) {
      // Row i holds i, 10 i and i + 0.5: each row's target still matches its features.
      CHECK(b[r].features[1] == 10 * b[r].features[0]);
      CHECK(b[r].targets[0] == b[r].features[0] + 0.5f);
      target_sum += b[r].targets[0];
    }
  }
  CHECK(sizes == std::vector<std::size_t>{4, 4, 2});
  CHECK(target_sum == 60.f);  // 55 + 10 x 0.5
}

TEST_CASE("from_csv: a field that is not a number names the file, line and column") {
  mo::testing::TempDir dir;
  write_text(dir / "bad.csv", "1,2,3\n4,x5,6\n");
  const std::string what =
      message_of([&] { (void)mo::data::from_csv(dir / "bad.csv", {.target_columns = {2}}); });
  CHECK(contains(what, "bad.csv', line 2, column 2: expected a number, found 'x5'"));

  write_text(dir / "trail.csv", "1,2,3\n4,5,6abc\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "trail.csv", {.target_columns = {2}}); }),
      "line 2, column 3: expected a number, found '6abc'"));

  write_text(dir / "empty.csv", "1,,3\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "empty.csv", {.target_columns = {2}}); }),
      "line 1, column 2: expected a number, found an empty field"));

  // Column names read as numbers: the message suggests the header option.
  write_text(dir / "named.csv", "a,b\n1,2\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "named.csv", {.target_columns = {1}}); }),
      "line 1, column 1: expected a number, found 'a' (column names? set .header = true)"));
}

TEST_CASE("from_csv: a ragged row names the line and the column counts") {
  mo::testing::TempDir dir;
  write_text(dir / "ragged.csv", "h1,h2,h3\n1,2,3\n4,5,6\n7,8\n");
  const std::string what = message_of([&] {
    (void)mo::data::from_csv(dir / "ragged.csv", {.target_columns = {0}, .header = true});
  });
  CHECK(contains(what, "ragged.csv', line 4: expected 3 columns (as line 2), found 2"));
}

TEST_CASE("from_csv: bad target columns, missing files and empty files raise memopt::error") {
  mo::testing::TempDir dir;
  write_text(dir / "t.csv", "1,2,3\n4,5,6\n");
  const auto path = dir / "t.csv";
  CHECK(contains(message_of([&] { (void)mo::data::from_csv(path, {.target_columns = {3}}); }),
                 "expected target columns below 3 (0-based, the file has 3 columns), found 3"));
  CHECK(contains(message_of([&] {
                   (void)mo::data::from_csv(path, {.target_columns = {1, 1}});
                 }),
                 "expected each target column once, found 1 listed twice"));
  CHECK(contains(message_of([&] { (void)mo::data::from_csv(path, {}); }),
                 "expected at least one target column"));
  CHECK(contains(message_of([&] {
                   (void)mo::data::from_csv(path, {.target_columns = {0, 1, 2}});
                 }),
                 "expected at least one feature column, found all 3 columns listed as targets"));
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "absent.csv", {.target_columns = {0}}); }),
      "absent.csv': no such file"));
  write_text(dir / "blank.csv", "x,y\n\n  \n");
  CHECK(contains(message_of([&] {
                   (void)mo::data::from_csv(dir / "blank.csv",
                                            {.target_columns = {0}, .header = true});
                 }),
                 "blank.csv': expected rows of numbers, found none"));
}

TEST_CASE("from_csv: two files of different row counts, or with target columns, are refused") {
  mo::testing::TempDir dir;
  write_text(dir / "x.csv", "1,2\n3,4\n5,6\n");
  write_text(dir / "y.csv", "7\n8\n");
  const std::string rows =
      message_of([&] { (void)mo::data::from_csv(dir / "x.csv", dir / "y.csv", {}); });
  CHECK(contains(rows, "expected as many rows of targets as of features, found 3 in"));
  CHECK(contains(rows, "and 2 in"));
  const std::string columns = message_of(
      [&] { (void)mo::data::from_csv(dir / "x.csv", dir / "y.csv", {.target_columns = {0}}); });
  CHECK(contains(columns, "expected no .target_columns"));
}

TEST_CASE("from_csv: a gzip file cut short raises memopt::error naming the file") {
  mo::testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += std::to_string(i) + ".25," + std::to_string(i + 1) + "\n";
  write_gzip(dir / "whole.csv.gz", text);
  std::ifstream in(dir / "whole.csv.gz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 20);
  write_text(dir / "cut.csv.gz", bytes.substr(0, bytes.size() - 6));  // into the trailer
  const std::string what =
      message_of([&] { (void)mo::data::from_csv(dir / "cut.csv.gz", {.target_columns = {1}}); });
  CHECK(contains(what, "cut.csv.gz"));
  CHECK(contains(what, "cut short"));
  // The whole file reads.
  CHECK(mo::data::from_csv(dir / "whole.csv.gz", {.target_columns = {1}}).size() == 200);
}

TEST_CASE("from_csv: numbers below float's range read as NumPy reads them: 0 or a denormal") {
  mo::testing::TempDir dir;
  // NumPy's loadtxt(dtype=float32) reads 0, -0, the denormal nearest 1e-40, 0 and 0.
  write_text(dir / "tiny.csv",
             "1e-50,-1e-50,1e-40,1e-400,0.0000007e-39,1e-99999999999999999999,5\n");
  const auto ds = mo::data::from_csv(dir / "tiny.csv", {.target_columns = {6}});
  const std::vector<float> x = values(ds.features());
  REQUIRE(x.size() == 6);
  CHECK(x[0] == 0.f);
  CHECK(!std::signbit(x[0]));
  CHECK(x[1] == 0.f);
  CHECK(std::signbit(x[1]));
  CHECK(x[2] == 1e-40f);
  CHECK(std::fpclassify(x[2]) == FP_SUBNORMAL);
  CHECK(x[3] == 0.f);
  CHECK(x[4] == 0.f);
  CHECK(x[5] == 0.f);
  CHECK(values(ds.targets()) == std::vector<float>{5.f});
}

TEST_CASE("from_csv: a magnitude beyond float's largest is refused, naming line and column") {
  mo::testing::TempDir dir;
  // NumPy would make these infinite; an infinite feature is almost surely a data error.
  const std::vector<std::string> fields = {"1e39", "-3.5e38", "1e400", "12e99999999999999999999"};
  for (const std::string& big : fields) {
    write_text(dir / "big.csv", "1,2,3\n4,5," + big + "\n");
    CHECK(contains(
        message_of([&] { (void)mo::data::from_csv(dir / "big.csv", {.target_columns = {2}}); }),
        "big.csv', line 2, column 3: expected a number within float's range (magnitude at most "
        "3.4028235e+38), found '" +
            big + "'"));
  }
  // The largest float reads; so does a value that rounds down to it.
  write_text(dir / "max.csv", "3.4028235e38,-3.40282356e38\n");
  const auto ds = mo::data::from_csv(dir / "max.csv", {.target_columns = {1}});
  CHECK(ds.features()[0] == 3.4028235e38f);
  CHECK(ds.targets()[0] == -3.4028235e38f);
}

TEST_CASE("from_csv: nan and inf, in any spelling, are refused as features and targets") {
  mo::testing::TempDir dir;
  for (const std::string field :
       {"nan", "NaN", "-nan", "+nan", "nan(1)", "inf", "-Infinity", "+INF"}) {
    write_text(dir / "nan.csv", "1,2\n3," + field + "\n");
    const std::string what =
        message_of([&] { (void)mo::data::from_csv(dir / "nan.csv", {.target_columns = {0}}); });
    CHECK_MESSAGE(contains(what, "nan.csv', line 2, column 2: expected a finite number, found '" +
                                     field + "'"),
                  what);
    CHECK(contains(what, "poison training"));
  }
}

TEST_CASE("from_csv: a UTF-8 byte order mark is skipped; a UTF-16 file is named as such") {
  mo::testing::TempDir dir;
  write_text(dir / "bom.csv",
             "\xef\xbb\xbf"
             "1.5,2\n3,4\n");
  const auto ds = mo::data::from_csv(dir / "bom.csv", {.target_columns = {1}});
  CHECK(values(ds.features()) == std::vector<float>{1.5f, 3.f});
  write_text(dir / "bom_header.csv", "\xef\xbb\xbf\"price\",rooms\n250,3\n");
  const auto named =
      mo::data::from_csv(dir / "bom_header.csv", {.target_columns = {0}, .header = true});
  CHECK(values(named.targets()) == std::vector<float>{250.f});
  // Excel's "Unicode text": UTF-16 LE with its mark.
  write_text(dir / "utf16.csv", std::string("\xff\xfe"
                                            "1\0,\0"
                                            "2\0\n\0",
                                            10));
  const std::string what =
      message_of([&] { (void)mo::data::from_csv(dir / "utf16.csv", {.target_columns = {1}}); });
  CHECK(contains(what, "utf16.csv': expected UTF-8 or ASCII text, found UTF-16"));
  CHECK(!contains(what, "header"));
}

TEST_CASE("from_csv: quoted fields and names read as Python's csv module reads them") {
  mo::testing::TempDir dir;
  // Quoted names holding the delimiter, a doubled quote and a line break; quoted numbers with
  // blanks around the quotes.
  write_text(dir / "q.csv",
             "\"price, USD\",\"the \"\"best\"\" rooms\",\"area\nm2\"\n"
             "\"250.5\", \"3\" ,61\n"
             "\" 1.9e2 \",2,\"+4\"\n");
  const auto ds = mo::data::from_csv(dir / "q.csv", {.target_columns = {0}, .header = true});
  CHECK(values(ds.features()) == std::vector<float>{3.f, 61.f, 2.f, 4.f});
  CHECK(values(ds.targets()) == std::vector<float>{250.5f, 190.f});

  // A line break inside quotes does not end the row; lines in messages count it.
  write_text(dir / "lines.csv", "\"a\nb\",c\n1,2\n3,x\n");
  CHECK(contains(message_of([&] {
                   (void)mo::data::from_csv(dir / "lines.csv",
                                            {.target_columns = {0}, .header = true});
                 }),
                 "lines.csv', line 4, column 2: expected a number, found 'x'"));

  // A quoted field holding the delimiter is one field, reported as written.
  write_text(dir / "comma.csv", "1,\"2,5\",3\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "comma.csv", {.target_columns = {0}}); }),
      "line 1, column 2: expected a number, found '\"2,5\"'"));

  // Quoted names without .header: the hint is right, and names the unquoted text's line.
  write_text(dir / "names.csv", "\"price\",\"rooms\"\n1,2\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "names.csv", {.target_columns = {0}}); }),
      "line 1, column 1: expected a number, found '\"price\"' (column names? set .header = "
      "true)"));

  // An opening quote with no closing one.
  write_text(dir / "open.csv", "1,2\n3,\"4\n5,6\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "open.csv", {.target_columns = {0}}); }),
      "open.csv', line 2, column 2: expected a closing quote for the field that opens there, "
      "found the end of the file"));

  // Quotes also work with the space delimiter.
  write_text(dir / "space.txt", "\"a b\" c\n \"1.5\"   2\n");
  const auto spaced = mo::data::from_csv(dir / "space.txt",
                                         {.target_columns = {1}, .header = true, .delimiter = ' '});
  CHECK(values(spaced.features()) == std::vector<float>{1.5f});
  CHECK(values(spaced.targets()) == std::vector<float>{2.f});
}

TEST_CASE("from_csv: lines may end with CR LF or a lone CR, inside quotes too") {
  mo::testing::TempDir dir;
  write_text(dir / "mac.csv", "1,2\r3,4\r\r5,6");
  const auto mac = mo::data::from_csv(dir / "mac.csv", {.target_columns = {1}});
  CHECK(values(mac.features()) == std::vector<float>{1.f, 3.f, 5.f});
  write_text(dir / "dos.csv", "\"a\r\nb\",c\r\n1,\"2\"\r\n3,4\r\n5,y\r\n");
  const auto what = message_of(
      [&] { (void)mo::data::from_csv(dir / "dos.csv", {.target_columns = {1}, .header = true}); });
  CHECK(contains(what, "dos.csv', line 5, column 2: expected a number, found 'y'"));
}

TEST_CASE("from_csv: a delimiter ending the line opens an empty last column, said plainly") {
  mo::testing::TempDir dir;
  write_text(dir / "trail.csv", "1,2,\n3,4,\n");
  const std::string what =
      message_of([&] { (void)mo::data::from_csv(dir / "trail.csv", {.target_columns = {1}}); });
  CHECK(contains(what,
                 "trail.csv', line 1, column 3: expected a number, found an empty field "
                 "(the line ends with the delimiter"));
  CHECK(!contains(what, "header"));
  // Only some lines end with one: a ragged row, with the same reason.
  write_text(dir / "some.csv", "1,2\n3,4,\n");
  CHECK(contains(
      message_of([&] { (void)mo::data::from_csv(dir / "some.csv", {.target_columns = {1}}); }),
      "some.csv', line 2: expected 2 columns (as line 1), found 3 (the line ends with the "
      "delimiter"));
  // A quoted delimiter is no such thing.
  write_text(dir / "quoted.csv", "\",\",\",\"\n1,2\n");
  CHECK(mo::data::from_csv(dir / "quoted.csv", {.target_columns = {1}, .header = true}).size() ==
        1);
}

TEST_CASE("from_csv: control and non-UTF-8 bytes reach messages escaped, long fields cut") {
  mo::testing::TempDir dir;
  const auto what_of = [&](const std::string& text) {
    write_text(dir / "esc.csv", text);
    const std::string what =
        message_of([&] { (void)mo::data::from_csv(dir / "esc.csv", {.target_columns = {0}}); });
    CHECK_MESSAGE(mo::io::detail::is_utf8(what), what);
    CHECK_MESSAGE(std::none_of(what.begin(), what.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 0x20; }),
                  what);
    return what;
  };
  // A terminal's escape sequence, a Latin-1 name, a NUL, a C1 control, a BOM in mid-file,
  // a backslash written in the file: each as an escape that cannot be mistaken for the others.
  CHECK(contains(what_of("1,2\n3,\x1b[31mred\x1b[0m\n"), "found '\\x1b[31mred\\x1b[0m'"));
  CHECK(contains(what_of("1,2\n3,caf\xe9\n"), "found 'caf\\xe9'"));
  CHECK(contains(what_of(std::string("1,2\n3,4") + '\0' + "5\n"), "found '4\\x005'"));
  CHECK(contains(what_of("1,2\n3,a\xc2\x85z\n"), "found 'a\\u0085z'"));
  CHECK(contains(what_of("1,2\n3,1\xc2\xa0"
                         "234\n"),
                 "found '1\\u00a0234'"));
  CHECK(contains(what_of("1,2\n\xef\xbb\xbf"
                         "3,4\n"),
                 "found '\\ufeff3'"));
  CHECK(contains(what_of("1,2\n3,\\x1b\n"), "found '\\\\x1b'"));
  CHECK(contains(what_of("1,2\n3,\"a\tb\nc\"\n"), "found '\"a\\tb\\nc\"'"));
  // Well-formed UTF-8 stays as it is.
  CHECK(contains(what_of("1,2\n3,\xc3\xa9t\xc3\xa9\n"), "found '\xc3\xa9t\xc3\xa9'"));
  // A megabyte of binary with no delimiter is shown by its start and its length.
  std::string blob(1 << 20, '\x9c');
  const std::string what = what_of("1,2\n3," + blob + "\n");
  CHECK(contains(what, "found '\\x9c\\x9c"));
  CHECK(contains(what, "...' (1048576 bytes)"));
  CHECK(what.size() < 600);
  // A file's name is escaped too, its backslashes kept.
  const auto odd = dir / "odd\x7f\x1b\xe9\\.csv";
  write_text(odd, "1,x\n");
  const std::string named =
      message_of([&] { (void)mo::data::from_csv(odd, {.target_columns = {0}}); });
  CHECK(contains(named, "odd\\x7f\\x1b\\xe9\\.csv', line 1, column 2"));
}

TEST_CASE("from_csv: a quote or a line end as the delimiter is refused") {
  mo::testing::TempDir dir;
  write_text(dir / "d.csv", "1\"2\n");
  for (const char delimiter : {'"', '\n', '\r'}) {
    CHECK(contains(message_of([&] {
                     (void)mo::data::from_csv(dir / "d.csv",
                                              {.target_columns = {0}, .delimiter = delimiter});
                   }),
                   "expected a delimiter other than a double quote or a line end"));
  }
}
