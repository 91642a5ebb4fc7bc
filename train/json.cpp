// The metrics object of a run's records (train/json.h).
#include "train/json.h"

namespace relpos {

JsonObject metrics_json(const Metrics& m) {
  JsonObject out;
  for (const auto& [name, value] : m.values) out.add(name, value);
  return out.add(m.unit, m.count);
}

}  // namespace relpos
