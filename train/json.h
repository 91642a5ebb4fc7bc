// A minimal JSON object writer for metrics.jsonl, summary.json and `relpos eval --json`: keys in
// insertion order, numbers with full double precision (non-finite ones as null), strings escaped.
#pragma once

#include <cstdint>
#include <string>

#include "train/metrics.h"

namespace relpos {

class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value) {
    return add(key, std::string(value));
  }
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, int64_t value);
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add(const std::string& key, const JsonObject& value);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

std::string json_quote(const std::string& s);
// Every value by name, then the count under its unit: {"loss", "accuracy", "macro_f1",
// "examples"} or {"loss", "bpc", "perplexity", "tokens"}.
JsonObject metrics_json(const Metrics& m);

}  // namespace relpos
