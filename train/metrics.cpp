// Split metrics (train/metrics.h).
#include "train/metrics.h"

#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/comm/comm.h"
#include "core/error.h"
#include "core/tensor.h"

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

bool Metrics::has(const std::string& name) const {
  for (const auto& [key, value] : values)
    if (key == name) return true;
  return false;
}

double Metrics::get(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [key, value] : values) {
    if (key == name) return value;
    names.push_back(key);
  }
  fail("metrics", "unknown metric '{}'; this task reports {}", name, fmt::join(names, ", "));
}

void MetricAccumulator::all_reduce() {
  if (!comm::distributed()) return;
  // [loss_sum, examples, correct, tp..., fp..., fn...] in f64: counts stay exact below 2^53.
  std::vector<double> packed{loss_sum_, static_cast<double>(examples_),
                             static_cast<double>(correct_)};
  for (const auto* counts : {&true_pos_, &false_pos_, &false_neg_})
    for (const int64_t c : *counts) packed.push_back(static_cast<double>(c));
  Tensor t = Tensor::from_vector(packed, {static_cast<int64_t>(packed.size())});
  comm::all_reduce_sum(t);
  const double* v = t.data<double>();
  loss_sum_ = v[0];
  examples_ = static_cast<int64_t>(v[1]);
  correct_ = static_cast<int64_t>(v[2]);
  size_t k = 3;
  for (auto* counts : {&true_pos_, &false_pos_, &false_neg_})
    for (int64_t& c : *counts) c = static_cast<int64_t>(v[k++]);
}

Metrics MetricAccumulator::result() const {
  double loss = 0, accuracy = 0, macro_f1 = 0;
  if (examples_ > 0) {
    loss = loss_sum_ / static_cast<double>(examples_);
    accuracy = static_cast<double>(correct_) / static_cast<double>(examples_);
    double f1_sum = 0;
    int64_t present = 0;
    for (int64_t c = 0; c < classes_; ++c) {
      const int64_t denom = 2 * true_pos_[c] + false_pos_[c] + false_neg_[c];
      if (denom == 0) continue;
      f1_sum += 2.0 * static_cast<double>(true_pos_[c]) / static_cast<double>(denom);
      ++present;
    }
    macro_f1 = present > 0 ? f1_sum / static_cast<double>(present) : 0.0;
  }
  return {{{"loss", loss}, {"accuracy", accuracy}, {"macro_f1", macro_f1}}, examples_, "examples"};
}

Metrics language_model_metrics(double loss_sum, int64_t tokens) {
  const double loss = tokens > 0 ? loss_sum / static_cast<double>(tokens) : 0.0;
  return {{{"loss", loss}, {"bpc", loss / std::log(2.0)}, {"perplexity", std::exp(loss)}},
          tokens,
          "tokens"};
}

std::string describe_metrics(const Metrics& m) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : m.values) parts.push_back(fmt::format("{} {:.4f}", name, value));
  return fmt::format("{}", fmt::join(parts, ", "));
}

bool metric_improves(const std::string& name, double candidate, double best) {
  const bool smaller = name == "loss" || name == "bpc" || name == "perplexity";
  return smaller ? candidate < best : candidate > best;
}

}  // namespace relpos
