#include "autograd/grad_mode.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/ops.h"

namespace relpos {

namespace {
thread_local bool g_grad_enabled = true;

std::atomic<bool>& anomaly_flag() {
  static std::atomic<bool> flag = [] {
    const char* env = std::getenv("RELPOS_DETECT_ANOMALY");
    return env != nullptr && std::strcmp(env, "0") != 0 && std::strcmp(env, "") != 0;
  }();
  return flag;
}
}  // namespace

bool grad_enabled() {
  return g_grad_enabled;
}

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) {
  g_grad_enabled = false;
}
NoGradGuard::~NoGradGuard() {
  g_grad_enabled = previous_;
}

bool detect_anomaly() {
  return anomaly_flag().load(std::memory_order_relaxed);
}
void set_detect_anomaly(bool on) {
  anomaly_flag().store(on);
}

void check_anomaly(const Tensor& t, const std::string& function, const char* what) {
  if (!detect_anomaly() || !t.defined() || !is_floating(t.dtype())) return;
  RELPOS_CHECK(all_finite(t), "anomaly", "{} produced NaN/Inf in its {} ({})", function, what,
               t.str());
}

}  // namespace relpos
