// The profiler's recording (profiler.h): one recorder at a time, driven from the thread that
// started it; marks from other threads (the data loader's prefetch) are ignored.
#include "autograd/profiler.h"

#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <utility>

#include "core/allocator.h"
#include "core/error.h"
#include "core/transfers.h"

namespace relpos::profile {

namespace {

using Clock = std::chrono::steady_clock;

// Module paths, interned for the life of the process: nodes made while recording point at them.
const std::string* intern(const std::string& path) {
  static std::deque<std::string> pool;
  static std::map<std::string, const std::string*> index;
  const auto found = index.find(path);
  if (found != index.end()) return found->second;
  pool.push_back(path);
  index.emplace(path, &pool.back());
  return &pool.back();
}

struct Recorder {
  Device device;
  std::thread::id thread = std::this_thread::get_id();
  std::map<const void*, const std::string*> modules;
  std::vector<const std::string*> open_modules;  // the stack of ModuleScopes
  std::map<std::string, Row> ops, by_module;
  Clock::time_point started, last;
  int64_t bytes_at_last = 0;
  int64_t d2h_at_start = 0;

  // Seconds and bytes since the previous mark, the device synchronized first.
  std::pair<double, int64_t> interval() {
    if (device.is_cuda()) synchronize(device);
    const Clock::time_point now = Clock::now();
    const int64_t bytes = memory_stats(device).allocated_bytes;
    const std::pair<double, int64_t> out{std::chrono::duration<double>(now - last).count(),
                                         bytes - bytes_at_last};
    last = now;
    bytes_at_last = bytes;
    return out;
  }
  Row& row(std::map<std::string, Row>& rows, const std::string& name) {
    Row& r = rows[name];
    r.name = name;
    return r;
  }
  const std::string* module() const { return open_modules.empty() ? nullptr : open_modules.back(); }
};

std::unique_ptr<Recorder> g_recorder;

// The recorder when this thread drives it.
Recorder* recorder() {
  Recorder* r = g_recorder.get();
  return r != nullptr && r->thread == std::this_thread::get_id() ? r : nullptr;
}

std::vector<Row> rows_of(const std::map<std::string, Row>& rows) {
  std::vector<Row> out;
  for (const auto& entry : rows) out.push_back(entry.second);
  return out;
}

}  // namespace

void start(Device device, std::map<const void*, std::string> modules) {
  RELPOS_CHECK(g_recorder == nullptr, "profile", "a profiler is already recording");
  auto r = std::make_unique<Recorder>();
  r->device = device;
  for (const auto& [address, path] : modules) r->modules[address] = intern(path);
  r->d2h_at_start = device_to_host_copies();
  if (device.is_cuda()) synchronize(device);
  r->started = r->last = Clock::now();
  r->bytes_at_last = memory_stats(device).allocated_bytes;
  g_recorder = std::move(r);
}

Recording stop() {
  RELPOS_CHECK(g_recorder != nullptr, "profile", "no profiler is recording");
  Recorder& r = *g_recorder;
  Recording out;
  out.ops = rows_of(r.ops);
  out.modules = rows_of(r.by_module);
  out.seconds = std::chrono::duration<double>(r.last - r.started).count();
  out.device_to_host_copies = device_to_host_copies() - r.d2h_at_start;
  g_recorder.reset();
  return out;
}

bool active() {
  return recorder() != nullptr;
}

void mark(const std::string& row) {
  Recorder* r = recorder();
  if (r == nullptr) return;
  const auto [seconds, bytes] = r->interval();
  Row& phase = r->row(r->ops, "(" + row + ")");
  ++phase.forward_calls;
  phase.forward_s += seconds;
  phase.forward_bytes += bytes;
}

void forward_op(const char* name) {
  Recorder* r = recorder();
  if (r == nullptr) return;
  const auto [seconds, bytes] = r->interval();
  for (Row* row : {&r->row(r->ops, name), &r->row(r->by_module, r->module() ? *r->module() : "")}) {
    ++row->forward_calls;
    row->forward_s += seconds;
    row->forward_bytes += bytes;
  }
}

const std::string* current_module() {
  Recorder* r = recorder();
  return r != nullptr ? r->module() : nullptr;
}

BackwardScope::BackwardScope(const std::string& name, const std::string* module)
    : on_(recorder() != nullptr), name_(name), module_(module) {
  if (on_) mark("backward engine");
}

BackwardScope::~BackwardScope() {
  Recorder* r = on_ ? recorder() : nullptr;
  if (r == nullptr) return;
  const auto [seconds, bytes] = r->interval();
  for (Row* row : {&r->row(r->ops, name_), &r->row(r->by_module, module_ ? *module_ : "")}) {
    ++row->backward_calls;
    row->backward_s += seconds;
    row->backward_bytes += bytes;
  }
}

ModuleScope::ModuleScope(const void* module) : open_(false) {
  Recorder* r = recorder();
  if (r == nullptr) return;
  const auto found = r->modules.find(module);
  if (found == r->modules.end()) return;  // a module outside the model given to start()
  r->open_modules.push_back(found->second);
  open_ = true;
}

ModuleScope::~ModuleScope() {
  Recorder* r = open_ ? recorder() : nullptr;
  if (r != nullptr && !r->open_modules.empty()) r->open_modules.pop_back();
}

}  // namespace relpos::profile
