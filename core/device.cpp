#include "core/device.h"

#include <atomic>

#include "core/backend.h"
#include "core/error.h"

namespace relpos {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    const std::string idx = text.substr(5);
    if (!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos && idx.size() < 4)
      return cuda(std::stoi(idx));
  }
  fail("device", "cannot parse device '{}'; expected cpu, cuda or cuda:N", text);
}

namespace {
std::atomic<bool> g_allow_tf32{false};
}  // namespace

void set_allow_tf32(bool on) {
  g_allow_tf32 = on;
}
bool allow_tf32() {
  return g_allow_tf32;
}

void synchronize(Device device) {
  if (device.is_cuda()) cuda::synchronize(device);
}

std::string Device::str() const {
  return is_cpu() ? "cpu" : fmt::format("cuda:{}", index);
}

}  // namespace relpos
