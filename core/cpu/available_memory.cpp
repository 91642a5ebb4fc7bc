// available_cpu_memory (core/allocator.h): /proc/meminfo and this process's memory cgroup, read
// anew on every call (the CPU allocator calls it rarely: allocator.cpp).
#include "core/allocator.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace relpos {

namespace {

// The value of "key: N kB" in /proc/meminfo (bytes), or of "key N" in a cgroup's memory.stat.
std::optional<int64_t> keyed_value(const std::string& path, const std::string& key, int64_t unit) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    std::istringstream rest(line.substr(key.size()));
    int64_t value = 0;
    if (rest >> value) return value * unit;
  }
  return std::nullopt;
}

// A cgroup file holding one number ("max", or v1's 2^63 rounded to a page, reads as no limit).
std::optional<int64_t> number_in(const std::string& path) {
  std::ifstream in(path);
  int64_t value = 0;
  if (!(in >> value) || value >= (int64_t{1} << 60)) return std::nullopt;
  return value;
}

// The directory of this process's memory cgroup, v2 first; empty when there is none.
struct MemoryCgroup {
  std::string dir;
  bool v2 = false;
};
MemoryCgroup memory_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1_path;
  std::optional<std::string> v2_path;
  while (std::getline(in, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) v2_path = path;
    if (controllers == "memory" || controllers.find("memory,") != std::string::npos ||
        controllers.find(",memory") != std::string::npos)
      v1_path = path;
  }
  if (v2_path && std::ifstream("/sys/fs/cgroup" + *v2_path + "/memory.max"))
    return {"/sys/fs/cgroup" + *v2_path, true};
  // Inside a container the group's own path is often mounted as the root.
  for (const std::string& dir :
       {"/sys/fs/cgroup/memory" + v1_path, std::string("/sys/fs/cgroup/memory")})
    if (!v1_path.empty() && std::ifstream(dir + "/memory.limit_in_bytes")) return {dir, false};
  return {};
}

// What the cgroup's limit leaves, or nullopt without a limit.
std::optional<int64_t> cgroup_headroom() {
  static const MemoryCgroup group = memory_cgroup();
  if (group.dir.empty()) return std::nullopt;
  const std::optional<int64_t> limit =
      number_in(group.dir + (group.v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  const std::optional<int64_t> usage =
      number_in(group.dir + (group.v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  if (!limit || !usage) return std::nullopt;
  const int64_t reclaimable = keyed_value(group.dir + "/memory.stat",
                                          group.v2 ? "inactive_file " : "total_inactive_file ", 1)
                                  .value_or(0);
  return std::max<int64_t>(0, *limit - std::max<int64_t>(0, *usage - reclaimable));
}

}  // namespace

std::optional<int64_t> available_cpu_memory() {
  const std::optional<int64_t> available = keyed_value("/proc/meminfo", "MemAvailable:", 1024);
  if (!available) return std::nullopt;
  const int64_t system = *available + keyed_value("/proc/meminfo", "SwapFree:", 1024).value_or(0);
  const std::optional<int64_t> group = cgroup_headroom();
  return group ? std::min(system, *group) : system;
}

}  // namespace relpos
