// The attention benchmark shared by relpos_bench_attention and `relpos bench attention`: every
// registered configuration (layers/attention/catalog.h: each variant and feature map, causal too,
// and each positional encoding in each host that takes it; names as bench_attention_torch.py's
// where it has a twin) and the measurement of one at one length — forward and forward+backward
// medians and the allocator's peak bytes — with running out of memory (a failed allocation, or a
// peak over a given limit) reported as a result, and a configuration that cannot be built at a
// length (a 2-D encoding at a non-square length) reported as skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "layers/attention/catalog.h"
#include "tools/bench/bench_common.h"

namespace relpos::bench {

// What one benchmark row runs (its name is --filter's).
using AttentionVariant = AttentionSetup;

// The registered configurations, enumerated once.
const std::vector<AttentionVariant>& attention_variants();

// The variants named in `filter` in table order (all of them when it is empty); throws
// relpos::Error "[bench] unknown variant 'x'; known: ..." for a name not in the table.
std::vector<const AttentionVariant*> select_variants(const std::vector<std::string>& filter);

// "1024,2048" -> {1024, 2048}; throws relpos::Error on a non-positive or malformed length.
std::vector<int64_t> parse_lengths(const std::string& text);

// A --memory-limit-mb value (> 0) in bytes, at most INT64_MAX (a larger limit is no limit there).
int64_t megabytes_to_bytes(double megabytes);

// Throws relpos::Error when `device` cannot run (a GPU in a CPU-only build or without one).
void check_device(Device device);

struct AttentionBenchOptions {
  std::vector<int64_t> lengths{1024, 2048, 4096, 8192, 16384};
  int64_t batch = 1, heads = 8, dim = 32;
  Device device = Device::cpu();
  DType precision = DType::f32;  // bf16: the variant runs in a bf16 autocast scope
  double min_seconds = 0.5;      // per timing (forward, forward+backward), after two warm-up calls
  int64_t min_runs = 3;
  bool time_forward = true;  // also time the forward pass alone (no graph recorded)
  // 0: no limit. Otherwise a variant counts as out of memory at a length when its peak, predicted
  // from its previous length (x (N/N_prev)^2 when quadratic, x N/N_prev otherwise) or measured,
  // exceeds this many bytes.
  int64_t memory_limit_bytes = 0;
  // 0: no limit. Quadratic variants are skipped (not run, not OOM) above this length.
  int64_t max_quadratic_n = 0;
};

struct AttentionResult {
  enum class Status { measured, oom, skipped };
  const AttentionVariant* variant = nullptr;
  int64_t length = 0;
  Status status = Status::measured;
  std::string reason;       // oom / skipped: why (the allocator's message, the limit exceeded)
  Timing forward;           // runs == 0 when not timed
  Timing forward_backward;  // one call: attend(q, k, v), then backward from a fixed gradient
  int64_t peak_bytes = 0;   // allocator bytes at the peak of one forward+backward call beyond
                            // what was live before it; for oom, the measured peak if any
};

// Runs every selected variant over the lengths (ascending), calling `report` with each result
// as soon as it is known. Once a variant runs out of memory at a length, every longer length is
// reported oom without running. Errors other than running out of memory propagate.
void run_attention_bench(const AttentionBenchOptions& options,
                         const std::vector<const AttentionVariant*>& variants,
                         const std::function<void(const AttentionResult&)>& report);

}  // namespace relpos::bench
