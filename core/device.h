// Where a tensor lives: the CPU or one CUDA device.
#pragma once

#include <cstdint>
#include <string>

namespace relpos {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  static Device parse(const std::string& text);  // "cpu", "cuda", "cuda:1"

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

// True when relpos was built with CUDA and at least one GPU is visible.
bool cuda_available();
// The GPUs this process sees (0 without CUDA).
int cuda_device_count();

// TF32 tensor-core math for f32 GEMMs on CUDA. Off by default, so f32 results match the CPU's
// (fp32 relative error <= 1e-5); on, products keep 10 mantissa bits (about 1e-3 relative).
void set_allow_tf32(bool on);
bool allow_tf32();

// Waits until every op queued on the device has finished (a no-op on the CPU). For timing.
void synchronize(Device device);

}  // namespace relpos
