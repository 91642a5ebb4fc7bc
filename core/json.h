// JSON through nlohmann-json: every JSON relpos reads or writes (metrics.jsonl, summary.json,
// `relpos eval --json`, the benchmarks' output, the npm packages of `relpos data prepare`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace relpos {

// Keys in insertion order, as written.
using Json = nlohmann::ordered_json;

// `value` on one line with a space after each ':' and ',' ({"key": value, "list": [1, 2]}), the
// format metrics.jsonl and tools/plots.py have always read; numbers in full double precision,
// non-finite ones as null; invalid UTF-8 in strings is replaced, never thrown.
std::string json_line(const Json& value);

// Why `text` is not valid UTF-8, which a JSON string must be ("invalid UTF-8 byte at index 3:
// 0xFF"); "" when it is.
std::string utf8_error(const std::string& text);

// The JSON text of the file at `path`; a missing file or bad JSON fails as "[who] path: reason".
Json read_json_file(const std::string& who, const std::string& path);

}  // namespace relpos
