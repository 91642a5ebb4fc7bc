// Classification metrics over a whole split: mean cross-entropy, accuracy and macro-F1 (the
// unweighted mean over classes of F1 = 2·TP / (2·TP + FP + FN), a class absent from both labels
// and predictions left out, as scikit-learn's f1_score(average="macro") with zero_division=0
// counts only classes present in either).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

struct ClassificationMetrics {
  double loss = 0;
  double accuracy = 0;
  double macro_f1 = 0;
  int64_t examples = 0;
};

class MetricAccumulator {
 public:
  explicit MetricAccumulator(int64_t num_classes);
  // One batch: the summed (not averaged) loss of its examples, predicted and true classes.
  void add(double loss_sum, const std::vector<int64_t>& predicted,
           const std::vector<int64_t>& labels);
  ClassificationMetrics result() const;

 private:
  int64_t classes_;
  double loss_sum_ = 0;
  int64_t examples_ = 0, correct_ = 0;
  std::vector<int64_t> true_pos_, false_pos_, false_neg_;
};

// The value a run selects checkpoints by: accuracy and macro_f1 grow, loss shrinks.
double metric_value(const ClassificationMetrics& m, const std::string& name);
bool metric_improves(const std::string& name, double candidate, double best);

}  // namespace relpos
