// The deferred device checks (core/deferred_checks.h) on the CPU, where a failure count is read
// the same way as on a GPU: queued in order, read once when none failed, the first failed check's
// error otherwise, a bounded queue, and nothing deferred outside a scope.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/deferred_checks.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/transfers.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

// A check's failure count as the CUDA id checks leave it: i64 [count, first position].
Tensor status(int64_t count) {
  return Tensor::from_vector(std::vector<int64_t>{count, 0}, {2});
}

}  // namespace

TEST_CASE("deferred device checks: only inside a scope, scopes nest") {
  CHECK_FALSE(device_checks_deferred());
  {
    DeferDeviceChecks outer;
    CHECK(device_checks_deferred());
    {
      DeferDeviceChecks inner;
      CHECK(device_checks_deferred());
    }
    CHECK(device_checks_deferred());
  }
  CHECK_FALSE(device_checks_deferred());
}

TEST_CASE("deferred device checks: one read when none failed, else the first failure's error") {
  std::vector<int> reported;
  auto report = [&](int id, int64_t count) {
    return [&reported, id, count] {
      reported.push_back(id);
      if (count > 0) fail("check " + std::to_string(id), "failed {} times", count);
    };
  };
  {
    DeferDeviceChecks scope;
    defer_device_check(status(0), report(1, 0));
    defer_device_check(status(0), report(2, 0));
  }
  // The queue outlives the scope: it runs where the caller reads the device anyway.
  const int64_t reads = host_reads();
  run_deferred_device_checks();
  CHECK(host_reads() == reads + 1);
  CHECK(reported.empty());  // no report read its check again

  {
    DeferDeviceChecks scope;
    defer_device_check(status(0), report(3, 0));
    defer_device_check(status(2), report(4, 2));
    defer_device_check(status(1), report(5, 1));
  }
  CHECK(test::error_of(run_deferred_device_checks) == "[check 4] failed 2 times");
  CHECK(reported == std::vector<int>{3, 4});
  // The queue is empty again.
  reported.clear();
  run_deferred_device_checks();
  CHECK(reported.empty());

  // A u8 flag (1: failed) counts too, as the cross-entropy check's comparison gives.
  defer_device_check(Tensor::from_vector(std::vector<uint8_t>{1}, {1}), report(6, 1));
  CHECK(test::error_of(run_deferred_device_checks) == "[check 6] failed 1 times");
}

TEST_CASE("deferred device checks: a long queue runs itself every 1,024 checks") {
  int reports = 0;
  const int64_t reads = host_reads();
  for (int i = 0; i < 1100; ++i) defer_device_check(status(0), [&reports] { ++reports; });
  CHECK(host_reads() == reads + 1);  // the first 1,024, read once
  run_deferred_device_checks();
  CHECK(host_reads() == reads + 2);
  CHECK(reports == 0);
}
