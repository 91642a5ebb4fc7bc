// The profiler (autograd/profiler.h): each forward op and each backward closure is one interval
// of its row, phases outside ops have their own rows, the rows add up to the recorded time, bytes
// are the allocator's, and nothing is recorded when it is off or from another thread.
#include <map>
#include <thread>

#include "autograd/functions.h"
#include "autograd/profiler.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

std::map<std::string, profile::Row> by_name(const std::vector<profile::Row>& rows) {
  std::map<std::string, profile::Row> out;
  for (const profile::Row& r : rows) out[r.name] = r;
  return out;
}

}  // namespace

TEST_CASE("profiler: one row per op kind, forward and backward, adding up to the recorded time") {
  const Var w(test::random_tensor({64, 32}, DType::f32, 1), true);
  const Var x(test::random_tensor({128, 32}, DType::f32, 2));
  profile::start(Device::cpu(), {});
  Var loss = mean(relu(matmul(x, w, false, true)));  // [128, 64] -> scalar
  profile::mark("between forward ops");
  loss.backward();
  profile::mark("backward engine");
  const profile::Recording r = profile::stop();

  const auto ops = by_name(r.ops);
  for (const char* op : {"matmul", "relu", "mean"}) {
    CAPTURE(op);
    REQUIRE(ops.count(op) == 1);
    CHECK(ops.at(op).forward_calls == 1);
    CHECK(ops.at(op).backward_calls == 1);
    CHECK(ops.at(op).forward_s >= 0);
  }
  // The matmul's forward allocated at least its [128, 64] f32 output; its backward dW [64, 32].
  CHECK(ops.at("matmul").forward_bytes >= 128 * 64 * 4);
  CHECK(ops.at("matmul").backward_bytes >= 64 * 32 * 4);
  CHECK(ops.count("(between forward ops)") == 1);
  CHECK(ops.count("(backward engine)") == 1);
  double total = 0;
  for (const profile::Row& row : r.ops) total += row.forward_s + row.backward_s;
  CHECK(total == doctest::Approx(r.seconds).epsilon(1e-9));
  // Outside every module scope, the ops' module is "".
  REQUIRE(r.modules.size() == 1);
  CHECK(r.modules[0].name.empty());
  CHECK(r.modules[0].forward_calls == 3);
  CHECK(r.device_to_host_copies == 0);
}

TEST_CASE("profiler: off, nothing is recorded; another thread's ops are not this one's") {
  CHECK_FALSE(profile::active());
  CHECK(profile::current_module() == nullptr);
  profile::forward_op("matmul");  // no recorder: nothing happens
  profile::mark("data");
  const Var x(test::random_tensor({8, 8}, DType::f32, 3), true);
  profile::start(Device::cpu(), {});
  CHECK(profile::active());
  std::thread other([&] {
    CHECK_FALSE(profile::active());
    sum(mul(x, x)).backward();
  });
  other.join();
  const profile::Recording r = profile::stop();
  CHECK(r.ops.empty());
  CHECK_FALSE(profile::active());
  CHECK_THROWS_WITH_AS(profile::stop(), doctest::Contains("no profiler is recording"), Error);
}

TEST_CASE("profiler: a module scope takes its ops, forward and backward, by the path given") {
  const Var w(test::random_tensor({4, 4}, DType::f32, 4), true);
  const int module = 0;  // any address stands for a module
  const int unnamed = 0;
  profile::start(Device::cpu(), {{&module, "encoder.layers.0"}});
  Var y;
  {
    const profile::ModuleScope scope(&module);
    REQUIRE(profile::current_module() != nullptr);
    CHECK(*profile::current_module() == "encoder.layers.0");
    {
      const profile::ModuleScope ignored(&unnamed);  // not given to start: no scope of its own
      y = tanh(w);
    }
  }
  CHECK(profile::current_module() == nullptr);
  sum(y).backward();
  const auto modules = by_name(profile::stop().modules);
  REQUIRE(modules.count("encoder.layers.0") == 1);
  CHECK(modules.at("encoder.layers.0").forward_calls == 1);   // tanh
  CHECK(modules.at("encoder.layers.0").backward_calls == 1);  // its backward
  REQUIRE(modules.count("") == 1);
  CHECK(modules.at("").forward_calls == 1);  // sum, outside the scope
}
