// The queue of deferred device checks (core/deferred_checks.h): per thread, with the failure
// counts summed on the device as checks join it.
#include "core/deferred_checks.h"

#include <utility>
#include <vector>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {
namespace {

constexpr size_t kMaxQueued = 1024;

struct Queue {
  int scopes = 0;
  std::vector<std::function<void()>> reports;
  Tensor failures;  // f64, 0-d, on the checks' device: their failure counts summed
};

thread_local Queue t_queue;

}  // namespace

DeferDeviceChecks::DeferDeviceChecks() {
  ++t_queue.scopes;
}

DeferDeviceChecks::~DeferDeviceChecks() {
  --t_queue.scopes;
}

bool device_checks_deferred() {
  return t_queue.scopes > 0;
}

void defer_device_check(const Tensor& failures, std::function<void()> report) {
  Queue& q = t_queue;
  if (q.reports.size() >= kMaxQueued ||
      (q.failures.defined() && q.failures.device() != failures.device()))
    run_deferred_device_checks();
  const Tensor count =
      cast(failures.reshape({failures.numel()}).slice(0, 0, 1), DType::f64).reshape({});
  q.failures = q.failures.defined() ? add(q.failures, count) : count;
  q.reports.push_back(std::move(report));
}

void run_deferred_device_checks() {
  Queue& q = t_queue;
  if (q.reports.empty()) return;
  std::vector<std::function<void()>> reports = std::move(q.reports);
  const Tensor failures = q.failures;
  q.reports.clear();
  q.failures = Tensor();
  if (failures.item() == 0) return;
  for (const auto& report : reports) report();  // the first failed one throws
  fail("device checks", "internal error: a deferred check counted a failure none reports");
}

}  // namespace relpos
