// Split metrics. Classification: mean cross-entropy, accuracy and macro-F1 (the unweighted mean
// over classes of F1 = 2·TP / (2·TP + FP + FN), a class absent from both labels and predictions
// left out, as scikit-learn's f1_score(average="macro") with zero_division=0 counts only classes
// present in either). Language modelling: mean cross-entropy per predicted token in nats, bits
// per character (bpc = loss / ln 2) and perplexity (e^loss).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace relpos {

// A split's metrics: named values in report order (the loss first) and what they average over.
struct Metrics {
  std::vector<std::pair<std::string, double>> values;
  int64_t count = 0;              // examples (classification) or predicted tokens (LM)
  std::string unit = "examples";  // what `count` counts: "examples" or "tokens"

  bool has(const std::string& name) const;
  // The value of `name`; an error listing the metrics there are when absent.
  double get(const std::string& name) const;
};

class MetricAccumulator {
 public:
  explicit MetricAccumulator(int64_t num_classes);
  // One batch: the summed (not averaged) loss of its examples, predicted and true classes.
  void add(double loss_sum, const std::vector<int64_t>& predicted,
           const std::vector<int64_t>& labels);
  Metrics result() const;  // loss, accuracy, macro_f1
  // Sums the counts of every rank of a data-parallel job into each rank's accumulator (a
  // collective; nothing in a job of one), so result() covers every rank's examples.
  void all_reduce();

 private:
  int64_t classes_;
  double loss_sum_ = 0;
  int64_t examples_ = 0, correct_ = 0;
  std::vector<int64_t> true_pos_, false_pos_, false_neg_;
};

// Summed cross-entropy (nats) over `tokens` predicted tokens -> loss, bpc, perplexity.
Metrics language_model_metrics(double loss_sum, int64_t tokens);

// "loss 0.3021, accuracy 0.9125, macro_f1 0.9087" (4 decimals), for logs and the CLI.
std::string describe_metrics(const Metrics& m);

// Whether a larger value is better (accuracy, macro_f1) or a smaller one (loss, bpc,
// perplexity): the best checkpoint and early stopping follow it.
bool metric_improves(const std::string& name, double candidate, double best);

}  // namespace relpos
