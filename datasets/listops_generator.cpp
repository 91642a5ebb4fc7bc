// The ListOps generator (datasets/listops_generator.h). Random draws come from Philox blocks
// reserved one at a time from a relpos::Generator, so the trees depend only on the seed.
#include "datasets/listops_generator.h"
#include "core/fnv1a.h"

#include <optional>
#include <unordered_set>

#include "core/allocator.h"
#include "core/error.h"
#include "core/philox.h"

namespace relpos {

namespace {

constexpr const char* kComponent = "listops generator";
constexpr const char* kOperatorNames[] = {"[MIN", "[MAX", "[MED", "[SM"};
// Draws (trees of any length) after which next() gives up: the default limits accept about
// one draw in ten, so only limits that admit (almost) no tree reach this.
constexpr int64_t kMaxDraws = 10'000'000;
// Sanity bounds on the configuration: lines stay well under the reader's 1 MB (a length unit
// takes at most 7 characters) and the recursion stays shallow.
constexpr int64_t kMaxLength = 100'000;
constexpr int kMaxDepth = 100;
constexpr int kMaxArgs = 1000;

// The value of operator `op` (index into kOperatorNames) over children given as counts of each
// digit; n children in all.
int apply(int op, const int (&counts)[10], int n) {
  if (op == 0 || op == 1) {  // MIN, MAX
    for (int i = 0; i < 10; ++i) {
      const int d = op == 0 ? i : 9 - i;
      if (counts[d] > 0) return d;
    }
  }
  if (op == 2) {  // MED: the values at sorted positions (n-1)/2 and n/2, mean truncated
    const auto at = [&](int k) {
      for (int d = 0; d < 10; ++d) {
        if (k < counts[d]) return d;
        k -= counts[d];
      }
      return 9;
    };
    return (at((n - 1) / 2) + at(n / 2)) / 2;
  }
  int sum = 0;  // SM
  for (int d = 0; d < 10; ++d) sum += d * counts[d];
  return sum % 10;
}

// FNV-1a: the same on every machine (std::hash is not), so de-duplication by hash keeps
// generated files identical across platforms without holding every source twice.
uint64_t fnv1a(const std::string& s) {
  Fnv1a h;
  h.add(s);
  return h.value;
}

}  // namespace

// 32-bit words from consecutive Philox blocks of a Generator.
struct ListOpsGenerator::Sampler {
  Generator& generator;
  philox::Block block{};
  int used = 4;

  uint32_t word() {
    if (used == 4) {
      block = philox::block_at(generator.seed(), generator.reserve(1));
      used = 0;
    }
    return block.v[used++];
  }
  double uniform() { return philox::to_unit(word()); }
  // An integer in [0, n) (multiply-shift; bias below n / 2^32).
  int below(int n) { return static_cast<int>((static_cast<uint64_t>(word()) * n) >> 32); }
};

ListOpsGenerator::ListOpsGenerator(uint64_t seed, ListOpsGeneratorConfig config)
    : config_(config), generator_(seed) {
  // max_length - min_length, not min_length + 1: the largest int64 min_length wrapped.
  RELPOS_CHECK(config_.min_length >= 0 && config_.max_length > config_.min_length &&
                   config_.max_length - config_.min_length > 1 && config_.max_length <= kMaxLength,
               kComponent,
               "length limits must satisfy 0 <= min_length < max_length - 1 and max_length <= {}, "
               "got {} and {}",
               kMaxLength, config_.min_length, config_.max_length);
  RELPOS_CHECK(config_.max_depth >= 1 && config_.max_depth <= kMaxDepth, kComponent,
               "max_depth must be in [1, {}], got {}", kMaxDepth, config_.max_depth);
  RELPOS_CHECK(config_.max_args >= 2 && config_.max_args <= kMaxArgs, kComponent,
               "max_args must be in [2, {}], got {}", kMaxArgs, config_.max_args);
  RELPOS_CHECK(config_.operator_probability >= 0 && config_.operator_probability <= 1, kComponent,
               "operator_probability must be in [0, 1], got {}", config_.operator_probability);
}

int ListOpsGenerator::grow(Sampler& sampler, int depth, std::string& out, int64_t& length) const {
  const bool is_operator =
      depth < config_.max_depth && sampler.uniform() < config_.operator_probability;
  if (!is_operator) {
    const int value = sampler.below(10);
    out += static_cast<char>('0' + value);
    length += 1;
    return value;
  }
  const int n = 2 + sampler.below(config_.max_args - 1);  // 2..max_args children
  const int op = sampler.below(4);
  length += 2;                             // the operator and its closing bracket
  if (length + n >= config_.max_length) {  // too long even if every child is a value
    length += n;                           // (>= max_length: the callers abandon the tree)
    return -1;
  }
  for (int i = 0; i <= n; ++i) out += "( ";
  out += kOperatorNames[op];
  int counts[10] = {};
  for (int i = 0; i < n; ++i) {
    out += ' ';
    const int value = grow(sampler, depth + 1, out, length);
    if (length >= config_.max_length) return -1;  // too long already: abandon the tree
    ++counts[value];
    out += " )";
  }
  out += " ] )";
  return apply(op, counts, n);
}

ListOpsTree ListOpsGenerator::next() {
  Sampler sampler{generator_};
  ListOpsTree tree;
  for (int64_t draw = 0; draw < kMaxDraws; ++draw) {
    tree.source.clear();
    tree.length = 0;
    tree.label = grow(sampler, 1, tree.source, tree.length);
    if (tree.length > config_.min_length && tree.length < config_.max_length) return tree;
  }
  fail(kComponent, "no tree with {} < length < {} in {} draws (max_depth {}, max_args {})",
       config_.min_length, config_.max_length, kMaxDraws, config_.max_depth, config_.max_args);
}

namespace {

// After this many trees their mean size is known, and a count too large for the memory left is
// refused before it fills it: a tree takes its text, its struct and its hash (kTreeOverhead),
// twice over while the caller writes them out.
constexpr int64_t kSampleTrees = 4096;
constexpr int64_t kTreeOverhead = sizeof(ListOpsTree) + 64;

void check_memory_for(int64_t count, int64_t sample_bytes) {
  const std::optional<int64_t> left = available_cpu_memory();
  const double mean = static_cast<double>(sample_bytes) / kSampleTrees;
  const double needed = 2 * mean * static_cast<double>(count);
  if (!left || needed <= static_cast<double>(*left + sample_bytes)) return;
  fail(kComponent,
       "{} trees take about {:.1f} GB of memory ({:.0f} bytes each, twice over while written); "
       "{:.1f} GB are left: generate fewer",
       count, needed / 1e9, mean, static_cast<double>(*left) / 1e9);
}

}  // namespace

std::vector<ListOpsTree> generate_listops(uint64_t seed, int64_t count,
                                          const ListOpsGeneratorConfig& config) {
  RELPOS_CHECK(count >= 0, kComponent, "count must be >= 0, got {}", count);
  ListOpsGenerator generator(seed, config);
  std::vector<ListOpsTree> trees;
  int64_t bytes = 0;
  // Hashes of the sources so far; a (p ~ 1e-10) collision skips a distinct tree, identically on
  // every machine.
  std::unordered_set<uint64_t> seen;
  int64_t duplicates_in_a_row = 0;
  while (static_cast<int64_t>(trees.size()) < count) {
    ListOpsTree tree = generator.next();
    if (!seen.insert(fnv1a(tree.source)).second) {
      RELPOS_CHECK(++duplicates_in_a_row < 100'000, kComponent,
                   "only {} distinct trees found for {} requested: the limits admit too few",
                   trees.size(), count);
      continue;
    }
    duplicates_in_a_row = 0;
    bytes += static_cast<int64_t>(tree.source.size()) + kTreeOverhead;
    trees.push_back(std::move(tree));
    if (static_cast<int64_t>(trees.size()) == kSampleTrees && count > kSampleTrees)
      check_memory_for(count, bytes);
  }
  return trees;
}

}  // namespace relpos
