// JSON text: memopt's writer and strict reader, checked against nlohmann-json as an
// independent reader (the tests' dependency, not the library's).

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "memopt/core/error.hpp"
#include "memopt/io/json_value.hpp"
#include "memopt/io/json_writer.hpp"

namespace mo = memopt;
using mo::io::JsonKind;
using mo::io::parse_json;

namespace {

std::string parse_error(std::string_view text) {
  try {
    (void)parse_json(text);
  } catch (const mo::io::JsonError& e) {
    return e.what();
  }
  return "no error";
}

// The texts both readers must accept, and that the mutation test starts from.
const std::vector<std::string> valid_texts{
    R"({"__metadata__":{"format":"pt"},"dense/kernel":{"dtype":"F32","shape":[784,128],)"
    R"("data_offsets":[0,401408]}})",
    R"([1, -2, 0, 3.25, -0.5e-3, 1E+2, 18446744073709551615, 18446744073709551616])",
    R"({"s":"tab\there \"quoted\" back\\slash \/ \u00e9\u20ac\ud83d\ude00","t":true,"f":false})",
    "  {\n\t\"a\" : [ ] , \"b\" : { } , \"c\" : null }\r\n",
    "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
    "0",
    "[[[[[]]]]]",
};

}  // namespace

TEST_CASE("JsonWriter writes compact JSON that an independent reader reads back") {
  constexpr char escapes[] = "q\" b\\ nl\n tab\t cr\r bs\b ff\f nul\0 x1f\x1f";
  const std::string_view escaped(escapes, sizeof escapes - 1);  // with its NUL
  mo::io::JsonWriter w;
  w.begin_object();
  w.key("name").value("dense/kernel");
  w.key("shape").begin_array().value(784).value(std::uint64_t{128}).end_array();
  w.key("signed").value(-7);
  w.key("flags").begin_array().value(true).value(false).null().end_array();
  w.key("empty").begin_object().end_object();
  w.key("escapes").value(escaped);
  w.key("utf8").value("caf\xc3\xa9 \xf0\x9f\x98\x80");
  w.end_object();
  const std::string text = std::move(w).text();
  CHECK(text.starts_with(R"({"name":"dense/kernel","shape":[784,128],"signed":-7,)"
                         R"("flags":[true,false,null],"empty":{},)"));
  // Keys in order and escapes as nlohmann writes them, byte for byte.
  const nlohmann::ordered_json back = nlohmann::ordered_json::parse(text);
  CHECK(back.dump() == text);
  CHECK(back["escapes"].get<std::string>() == escaped);
  CHECK(back["utf8"] == "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

TEST_CASE("JsonWriter refuses strings that are not UTF-8") {
  for (const std::string_view bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "abc\xe2\x82"}) {
    mo::io::JsonWriter w;
    CHECK_THROWS_WITH_AS(w.value(bad), doctest::Contains("expected UTF-8 text"), mo::error);
  }
}

TEST_CASE("parse_json reads values, strings and numbers as written") {
  const mo::io::JsonValue v = parse_json(valid_texts[2]);
  REQUIRE(v.is_object());
  REQUIRE(v.members.size() == 3);
  CHECK(v.members[0].key == "s");
  CHECK(v.find("s")->text ==
        "tab\there \"quoted\" back\\slash / \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  CHECK(v.find("t")->kind == JsonKind::boolean);
  CHECK(v.find("t")->text == "true");
  CHECK(v.find("missing") == nullptr);

  const mo::io::JsonValue numbers = parse_json(valid_texts[1]);
  REQUIRE(numbers.items.size() == 8);
  CHECK(numbers.items[0].as_unsigned() == 1u);
  CHECK_FALSE(numbers.items[1].as_unsigned());  // negative
  CHECK(numbers.items[2].as_unsigned() == 0u);
  CHECK_FALSE(numbers.items[3].as_unsigned());  // a fraction
  CHECK_FALSE(numbers.items[5].as_unsigned());  // an exponent
  CHECK(numbers.items[6].as_unsigned() == UINT64_MAX);
  CHECK_FALSE(numbers.items[7].as_unsigned());  // one past 64 bits
  CHECK(numbers.items[4].text == "-0.5e-3");
  CHECK(numbers.items[4].type_name() == "number");
  CHECK(numbers.dump() ==
        R"([1,-2,0,3.25,-0.5e-3,1E+2,18446744073709551615,18446744073709551616])");
}

TEST_CASE("parse_json refuses what RFC 8259 refuses, and says where") {
  CHECK(parse_error("") == "at byte 0: expected a value, found the end of the text");
  CHECK(parse_error("{\"w\":") == "at byte 5: expected a value, found the end of the text");
  CHECK(parse_error("[1,]") == "at byte 3: expected a value, found ']'");
  CHECK(parse_error("{\"a\":1,}") == "at byte 7: expected a string key, found '}'");
  CHECK(parse_error("{\"a\" 1}") == "at byte 5: expected ':' after a key, found '1'");
  CHECK(parse_error("[1 2]") == "at byte 3: expected ',' or ']' in an array, found '2'");
  CHECK(parse_error("01") == "at byte 1: expected the end of the text, found '1'");
  CHECK(parse_error("1.") == "at byte 2: expected a digit after '.', found the end of the text");
  CHECK(parse_error("1e") ==
        "at byte 2: expected a digit in the exponent, found the end of the text");
  CHECK(parse_error("-") == "at byte 1: expected a value, found the end of the text");
  CHECK(parse_error("+1") == "at byte 0: expected a value, found '+'");
  CHECK(parse_error("tru") == "at byte 0: expected a value (true?), found 't'");
  CHECK(parse_error("\"a\nb\"").find("control character") != std::string::npos);
  CHECK(parse_error("\"\\x\"").find("expected an escape") != std::string::npos);
  CHECK(parse_error("\"\\u12g4\"").find("4 hexadecimal digits") != std::string::npos);
  CHECK(parse_error("\"\\udc00\"").find("high surrogate before a low one") != std::string::npos);
  CHECK(parse_error("\"\\ud800x\"").find("low surrogate after a high one") != std::string::npos);
  CHECK(parse_error("\"\\ud800\\u0041\"").find("expected a low surrogate") != std::string::npos);
  CHECK(parse_error("\"\xff\"") ==
        "at byte 1: expected UTF-8 text in a string, found the byte 0xff");
  CHECK(parse_error("\"\xc0\xaf\"").find("UTF-8") != std::string::npos);  // overlong '/'
  CHECK(parse_error("[1] x") == "at byte 4: expected the end of the text, found 'x'");
}

TEST_CASE("parse_json refuses a key given twice in one object, and deep nesting") {
  CHECK(parse_error(R"({"a":1,"b":2,"a":3})").find("found \"a\" twice") != std::string::npos);
  CHECK(parse_error(R"({"x":{"k":1,"k":1}})").find("found \"k\" twice") != std::string::npos);
  CHECK(parse_error(R"([{"a":1},{"a":2}])") == "no error");  // one key per object

  const int limit = mo::io::detail::max_json_depth;
  CHECK(parse_error(std::string(limit, '[') + std::string(limit, ']')) == "no error");
  CHECK(parse_error(std::string(limit + 1, '[') + std::string(limit + 1, ']'))
            .find("levels of nesting") != std::string::npos);
  // A hostile header of a million brackets is refused, not recursed into.
  CHECK(parse_error(std::string(1'000'000, '[')).find("levels of nesting") != std::string::npos);
}

TEST_CASE("parse_json builds at most the number of values its limits allow") {
  // "[0,0,0]" is 4 values: the array and its three items; the fourth starts at byte 5.
  CHECK(parse_json("[0,0,0]", {.max_values = 4}).items.size() == 3);
  CHECK_THROWS_WITH_AS(parse_json("[0,0,0]", {.max_values = 3}),
                       "at byte 5: expected at most 3 values (arrays, objects and everything in "
                       "them)",
                       mo::io::JsonError);
  // Keys are not values; an object's member values are.
  CHECK(parse_json(R"({"a":[],"b":{}})", {.max_values = 3}).members.size() == 2);
  CHECK_THROWS_AS(parse_json(R"({"a":[],"b":{}})", {.max_values = 2}), mo::io::JsonError);
  CHECK(parse_error("[0,0,0]") == "no error");  // no limit unless asked for
}

TEST_CASE("parse_json accepts exactly what nlohmann-json accepts, on mutated texts") {
  // Each text is mutated by replacing, inserting or deleting a byte drawn from JSON's
  // punctuation, digits, letters and a few invalid bytes. The readers must agree, but for
  // what memopt refuses on purpose (a repeated key) and nlohmann's refusal of numbers beyond
  // double's range. (The alphabet has no NUL byte, which nlohmann reads as the end of text.)
  const std::string alphabet = "{}[]:,\"\\ -+.eE0123456789tfnulrsabx\x7f\xc3\xa9\xff\n";
  std::mt19937 rng(20261204);
  int accepted = 0, refused = 0;
  for (const std::string& seed : valid_texts) {
    for (int round = 0; round < 3000; ++round) {
      std::string text = seed;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = text.empty() ? 0 : rng() % text.size();
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0:
            if (!text.empty()) text[at] = c;
            break;
          case 1:
            text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
            break;
          default:
            if (!text.empty()) text.erase(at, 1);
        }
      }
      const std::string why = parse_error(text);
      const bool ours = why == "no error";
      const bool converts = nlohmann::json::accept(text);
      bool theirs = converts;
      if (ours && !theirs) {
        try {
          [[maybe_unused]] const auto parsed = nlohmann::json::parse(text);
        } catch (const nlohmann::json::out_of_range& e) {
          theirs = e.id == 406;  // a number beyond double: the grammar allows it
        } catch (const nlohmann::json::exception&) {
        }
      }
      if (!ours && theirs && why.find("twice") != std::string::npos) continue;
      INFO("text: ", text, "\nmemopt: ", why);
      CHECK(ours == theirs);
      (ours ? accepted : refused) += 1;
      // What memopt read, written back, is the value nlohmann reads.
      if (ours && converts)
        CHECK(nlohmann::json::parse(parse_json(text).dump()) == nlohmann::json::parse(text));
    }
  }
  // Both outcomes are exercised, not one of them only.
  CHECK(accepted > 1000);
  CHECK(refused > 1000);
}
