// core/json.h: the one-line format metrics.jsonl and summary.json are written in, and files read
// back through nlohmann-json with errors that name the file.
#include <cmath>
#include <limits>

#include "core/json.h"
#include "tests/harness.h"

using namespace relpos;

TEST_CASE("json: one line, keys in order, a space after ':' and ','; non-finite numbers as null") {
  Json summary = {{"name", "run \"a\"\n"}, {"steps", 6}, {"stopped_early", false}};
  summary["test_best"] = {{"loss", 0.25}, {"accuracy", std::nan("")}, {"examples", 32}};
  summary["lengths"] = {1024, 2048};
  summary["wall_time_s"] = std::numeric_limits<double>::infinity();
  CHECK(json_line(summary) ==
        "{\"name\": \"run \\\"a\\\"\\n\", \"steps\": 6, \"stopped_early\": false, \"test_best\": "
        "{\"loss\": 0.25, \"accuracy\": null, \"examples\": 32}, \"lengths\": [1024, 2048], "
        "\"wall_time_s\": null}");
  CHECK(json_line(Json::object()) == "{}");
  CHECK(json_line(Json::array()) == "[]");
  CHECK(json_line(Json(std::string("bad \xff byte"))) == "\"bad \xef\xbf\xbd byte\"");
}

TEST_CASE("json: a summary written on one line reads back with every value") {
  test::ScratchDir dir;
  const Json summary = {{"steps", 200},
                        {"metric", "accuracy"},
                        {"test_last", {{"loss", 0.1234567890123}, {"accuracy", 0.96875}}},
                        {"peak_memory_bytes", int64_t{1} << 40}};
  const std::string path = dir.write("summary.json", json_line(summary) + "\n");
  const Json back = read_json_file("reproduce", path);
  CHECK(back == summary);
  CHECK(back["test_last"]["loss"].get<double>() == 0.1234567890123);
  CHECK(back["peak_memory_bytes"].get<int64_t>() == int64_t{1} << 40);
}

TEST_CASE("json: a damaged or missing file is refused naming it") {
  test::ScratchDir dir;
  const std::string cut = dir.write("cut.json", "{\"data\": [0.5, ");
  CHECK(test::error_of([&] {
          read_json_file("mnist", cut);
        }).find("[mnist] " + cut + ": not valid JSON: ") == 0);
  const std::string none = dir.file("none.json");
  CHECK(test::error_of([&] {
          read_json_file("mnist", none);
        }).find("[mnist] " + none + ": cannot open: ") == 0);
}
