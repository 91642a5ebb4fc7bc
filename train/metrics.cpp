// Split metrics (train/metrics.h).
#include "train/metrics.h"

#include <limits>
#include <string>

#include "core/error.h"

namespace relpos {

MetricAccumulator::MetricAccumulator(int64_t num_classes)
    : classes_(num_classes),
      true_pos_(num_classes),
      false_pos_(num_classes),
      false_neg_(num_classes) {
  RELPOS_CHECK(num_classes > 0, "metrics", "num_classes must be positive, got {}", num_classes);
}

void MetricAccumulator::add(double loss_sum, const std::vector<int64_t>& predicted,
                            const std::vector<int64_t>& labels) {
  RELPOS_CHECK(predicted.size() == labels.size(), "metrics", "{} predictions for {} labels",
               predicted.size(), labels.size());
  loss_sum_ += loss_sum;
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t p = predicted[i], y = labels[i];
    RELPOS_CHECK(p >= 0 && p < classes_ && y >= 0 && y < classes_, "metrics",
                 "class out of range [0, {}): predicted {}, label {}", classes_, p, y);
    ++examples_;
    if (p == y) {
      ++correct_;
      ++true_pos_[p];
    } else {
      ++false_pos_[p];
      ++false_neg_[y];
    }
  }
}

ClassificationMetrics MetricAccumulator::result() const {
  ClassificationMetrics m;
  m.examples = examples_;
  if (examples_ == 0) return m;
  m.loss = loss_sum_ / static_cast<double>(examples_);
  m.accuracy = static_cast<double>(correct_) / static_cast<double>(examples_);
  double f1_sum = 0;
  int64_t present = 0;
  for (int64_t c = 0; c < classes_; ++c) {
    const int64_t denom = 2 * true_pos_[c] + false_pos_[c] + false_neg_[c];
    if (denom == 0) continue;
    f1_sum += 2.0 * static_cast<double>(true_pos_[c]) / static_cast<double>(denom);
    ++present;
  }
  m.macro_f1 = present > 0 ? f1_sum / static_cast<double>(present) : 0.0;
  return m;
}

double metric_value(const ClassificationMetrics& m, const std::string& name) {
  if (name == "accuracy") return m.accuracy;
  if (name == "macro_f1") return m.macro_f1;
  if (name == "loss") return m.loss;
  throw Error(fmt::format("[metrics] unknown metric '{}'; known: accuracy, macro_f1, loss", name));
}

bool metric_improves(const std::string& name, double candidate, double best) {
  return name == "loss" ? candidate < best : candidate > best;
}

}  // namespace relpos
