#include "core/cpu_threads.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace relpos {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kInterval = std::chrono::milliseconds(25);
constexpr size_t kWindow = 5;

// Runnable tasks on the machine (/proc/stat procs_running), or -1.
int machine_running() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "procs_running") {
      int n = -1;
      in >> n;
      return n;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

// Runnable threads of this process (state R in /proc/self/task/*/stat), or -1.
int own_running() {
  std::error_code error;
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // the thread ended meanwhile
    const size_t paren = line.rfind(')');   // the name may hold spaces and parentheses
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'R') ++n;
  }
  return error ? -1 : n;
}

struct State {
  std::mutex mutex;
  int requested = 0;  // what the user or the launcher set
  int applied = 0;    // what the last call set
  int cores = 0;
  Clock::time_point last{};
  std::array<int, kWindow> others{};  // runnable threads of other processes, last looks
  size_t looks = 0;
  bool unavailable = false;
};

State& state() {
  static State s;
  return s;
}

}  // namespace

int requested_cpu_threads() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.requested;
}

void fit_threads_to_free_cores() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.requested == 0 || omp_get_max_threads() != s.applied) {  // first call, or set meanwhile
    s.requested = s.applied = omp_get_max_threads();
    s.cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  if (s.unavailable || s.requested == 1) return;
  const Clock::time_point now = Clock::now();
  if (s.looks > 0 && now - s.last < kInterval) return;
  s.last = now;
  const int all = machine_running(), mine = own_running();
  if (all < 0 || mine < 0) {
    s.unavailable = true;
    return;
  }
  s.others[s.looks++ % kWindow] = std::max(0, all - mine);
  const size_t filled = std::min(s.looks, kWindow);
  const int others = *std::min_element(s.others.begin(), s.others.begin() + filled);
  const int threads = std::clamp(s.cores - others, 1, s.requested);
  if (threads != s.applied) omp_set_num_threads(threads);
  s.applied = threads;
}

}  // namespace relpos
