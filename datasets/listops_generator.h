// The ListOps generator (Nangia & Bowman 2018 as in LRA's listops.py; EXPERIMENTS.md "ListOps
// generator"): random operator trees over the digits 0-9, seeded with Philox so a seed gives the
// same trees on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/generator.h"

namespace relpos {

// A node at depth < max_depth is an operator with probability operator_probability, else a
// value; the root has depth 1, so nodes at depth max_depth are values. An operator (MIN, MAX,
// MED, SM, equally likely) has 2..max_args children. A tree's length counts operators, values
// and closing brackets (1 per value, 2 per operator); kept when min_length < length < max_length.
struct ListOpsGeneratorConfig {
  int64_t min_length = 500;
  int64_t max_length = 2000;
  int max_depth = 10;
  int max_args = 10;
  double operator_probability = 0.25;
};

// One tree in LRA's text layout, its value and length. The layout is LRA's to_string of the
// left-nested pairs ((((op, c1), c2), ...), ']'): an operator with k children is written as
// k + 1 "( ", the operator, then each child followed by " )", then " ] )", tokens separated by
// single spaces. E.g. MAX(2, 9) -> "( ( ( [MAX 2 ) 9 ) ] )"; a value is its digit.
// MIN/MAX as named; MED = int of the median (even count: mean of the middle two, truncated);
// SM = sum mod 10.
struct ListOpsTree {
  std::string source;
  int label = 0;
  int64_t length = 0;
};

class ListOpsGenerator {
 public:
  explicit ListOpsGenerator(uint64_t seed, ListOpsGeneratorConfig config = {});

  // The next tree within the length limits (rejection sampling; duplicates possible).
  ListOpsTree next();

 private:
  struct Sampler;
  // Appends the subtree at `depth` to `out`, adds its length to `length` and returns its value;
  // stops early (returning -1) once `length` must reach config_.max_length.
  int grow(Sampler& sampler, int depth, std::string& out, int64_t& length) const;

  ListOpsGeneratorConfig config_;
  Generator generator_;  // Philox seed and the next unused block
};

// `count` distinct trees from `seed`, in generation order (LRA de-duplicates the same way,
// so splits cut from this list are disjoint). Errors when the limits admit too few trees.
std::vector<ListOpsTree> generate_listops(uint64_t seed, int64_t count,
                                          const ListOpsGeneratorConfig& config = {});

}  // namespace relpos
