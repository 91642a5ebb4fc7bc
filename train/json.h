// JSON records of a run (metrics.jsonl, summary.json, `relpos eval --json`) built by chained
// adds over core/json.h: JsonObject().add("event", "eval").add("step", 3).str().
#pragma once

#include <string>

#include "core/json.h"
#include "train/metrics.h"

namespace relpos {

class JsonObject {
 public:
  JsonObject() : json_(Json::object()) {}
  template <typename T>
  JsonObject& add(const std::string& key, const T& value) {
    json_[key] = value;
    return *this;
  }
  JsonObject& add(const std::string& key, const JsonObject& value) { return add(key, value.json_); }
  const Json& json() const { return json_; }
  // One line: {"key": value, ...}.
  std::string str() const { return json_line(json_); }

 private:
  Json json_;
};

// Every value by name, then the count under its unit: {"loss", "accuracy", "macro_f1",
// "examples"} or {"loss", "bpc", "perplexity", "tokens"}.
JsonObject metrics_json(const Metrics& m);

}  // namespace relpos
