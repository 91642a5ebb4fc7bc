// Options (core/options.h): typed reads, the keys nobody read, and the defaults a read records
// so a run can write down what every key it left out meant.
#include <doctest/doctest.h>

#include <utility>

#include "core/options.h"
#include "core/shape.h"
#include "tests/harness.h"

using namespace relpos;

TEST_CASE("options: a read with a fallback records it as the key's default, present or not") {
  Options o("attention");
  o.set("type", "linear").set_list("grid", {"14", "14"});
  CHECK(o.get<std::string>("type", "softmax") == "linear");
  CHECK(o.get<double>("eps", 1e-6) == 1e-6);
  CHECK(o.get<bool>("fused", true));
  CHECK(o.get_list<int64_t>("grid", {}) == std::vector<int64_t>{14, 14});
  CHECK(o.get_list<int64_t>("window", {3, 5}) == std::vector<int64_t>{3, 5});
  const auto d = o.defaults();
  REQUIRE(d.size() == 5);
  CHECK(d.at("type").scalar == "softmax");  // the default, not the value written
  CHECK(d.at("eps").scalar == "1e-06");
  CHECK(d.at("fused").scalar == "true");
  CHECK((d.at("grid").is_list && d.at("grid").list.empty()));
  CHECK(d.at("window").list == std::vector<std::string>{"3", "5"});
  // Each default reads back as the value it stands for.
  double eps = 0;
  REQUIRE(parse_scalar(d.at("eps").scalar, eps));
  CHECK(eps == 1e-6);
}

TEST_CASE("options: a fallback from another setting, or two different fallbacks, is no default") {
  Options o("positional");
  CHECK(o.get_inherited<int64_t>("max_len", 785) == 785);
  CHECK(o.get_list_inherited<int64_t>("grid", {28, 28}) == std::vector<int64_t>{28, 28});
  o.get<std::string>("pad_to", "batch");
  o.get<int64_t>("pad_to", 0);
  o.get<int64_t>("window", 16);
  o.get<int64_t>("window", 16);  // read again alike: still one default
  const auto d = o.defaults();
  CHECK(d.size() == 1);
  CHECK(d.count("window"));
  CHECK(o.asked() == std::vector<std::string>{"grid", "max_len", "pad_to", "window"});
}

TEST_CASE("options: a with() copy records its reads and defaults in the mapping it came from") {
  Options user("model.attention");
  const Options copy = user.with("type", "rel_xl");
  copy.get<bool>("fused", true);
  copy.get<std::string>("type", "softmax");  // present in the copy: not the user's default
  CHECK(user.defaults().count("fused"));
  CHECK_FALSE(user.defaults().count("type"));
  CHECK_FALSE(user.has("type"));
  user.check_all_used();
}

TEST_CASE("options: scalar_text writes what parse_scalar reads back") {
  for (const double x : {0.1, 1e-6, 3.0, -2.5e-12, 1.0 / 3}) {
    double back = 0;
    REQUIRE(parse_scalar(scalar_text(x), back));
    CHECK(back == x);
  }
  bool b = false;
  REQUIRE(parse_scalar(scalar_text(true), b));
  CHECK(b);
  int64_t i = 0;
  REQUIRE(parse_scalar(scalar_text(int64_t{-9007199254740993}), i));
  CHECK(i == -9007199254740993);
}

TEST_CASE("options: get_size reads a size between its least value and 2^40") {
  Options o("model.positional");
  o.set("window", 7).set("big", "9223372036854775807").set("edge", kLargestSize).set("zero", 0);
  CHECK(o.get_size("window", 16) == 7);
  CHECK(o.get_size("absent", 16) == 16);
  CHECK(o.get_size("edge", 1) == kLargestSize);
  CHECK(o.get_size("zero", 5, 0) == 0);
  // The largest int64 window made 2·window + 1 wrap to -1: "negative size in shape [-1, 16]".
  CHECK(test::error_of([&] { (void)o.get_size("big", 16); }) ==
        "[model.positional] big 9223372036854775807 is larger than any machine holds (at most "
        "2^40)");
  CHECK(test::error_of([&] { (void)o.get_size("zero", 16); }) ==
        "[model.positional] zero must be >= 1, got 0");
  CHECK(o.defaults().at("window").scalar == "16");  // recorded as get records it
}

TEST_CASE("options: numbers are decimal as YAML writes them, and finite") {
  double x = 0;
  for (const char* text : {"inf", "-inf", "nan", "infinity", "1e400", "0x1p-10", "0x10", "-0x1p2",
                           "", "+", "-", "++1", "+-1", " 1", "1 ", "1e", "1,5", ".", "1e-3f"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_scalar(std::string(text), x));
  }
  const std::pair<const char*, double> good[] = {{"1e-3", 1e-3}, {"-.5", -0.5}, {"+2.0", 2.0},
                                                 {"5.", 5.0},    {"3", 3.0},    {"-1E+2", -100.0}};
  for (const auto& number : good) {
    CAPTURE(number.first);
    REQUIRE(parse_scalar(std::string(number.first), x));
    CHECK(x == number.second);
  }
  int64_t i = 0;
  for (const char* text : {"0x10", "+-4", "++4", "+", "4.0", "1e3", " 4", "+ 4"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_scalar(std::string(text), i));
  }
  REQUIRE(parse_scalar(std::string("+4"), i));
  CHECK(i == 4);
  REQUIRE(parse_scalar(std::string("-4"), i));
  CHECK(i == -4);
  Options o("model.attention");
  o.set("eps", "inf");
  CHECK(test::error_of([&] { (void)o.get<double>("eps", 1e-6); }) ==
        "[model.attention] option 'eps' must be a finite number, got 'inf'");
}

TEST_CASE(
    "options: a key written with no value reads as left out, and nothing reading it is an error") {
  Options o("model.attention");
  o.set("type", "linear").set_no_value("feature_map").set_no_value("type:dpfp");
  CHECK_FALSE(o.has("feature_map"));
  CHECK(o.get<std::string>("feature_map", "elu1") == "elu1");
  CHECK(o.get<std::string>("type", "softmax") == "linear");
  CHECK(o.unread() == std::vector<std::string>{"type:dpfp"});
  // `{type:dpfp}` is YAML's key "type:dpfp" with no value: refused, with what was meant.
  CHECK(test::error_of([&] { o.check_all_used(); }) ==
        "[model.attention] unknown option 'type:dpfp'; known: feature_map, type (YAML needs a "
        "space after a key's colon: 'type: dpfp', not 'type:dpfp')");
  // Copies keep the keys without a value; a value set later replaces the mark.
  Options copy = o.clone();
  CHECK(copy.unread() == std::vector<std::string>{"feature_map", "type", "type:dpfp"});
  copy.set("type:dpfp", "1");
  CHECK(copy.has("type:dpfp"));
  CHECK(unknown_key_hint("feature_map") == "");
  CHECK(unknown_key_hint("a: b") == "");
  CHECK(unknown_key_hint("lr:") == "");
}
