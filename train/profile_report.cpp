// profile_report (profile_report.h).
#include "train/profile_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace relpos {

namespace {

double total_s(const profile::Row& r) {
  return r.forward_s + r.backward_s;
}

// One row: per-update milliseconds and megabytes, and the share of the recorded time.
std::string line(const std::string& name, const profile::Row& r, double per, double whole_s) {
  const auto ms = [&](double s) { return fmt::format("{:10.3f}", 1e3 * s * per); };
  const auto calls = [&](int64_t n) {
    return n == 0 ? std::string(8, ' ') : fmt::format("{:8.1f}", static_cast<double>(n) * per);
  };
  return fmt::format("{:<44} {} {} {} {} {} {:6.1f}% {:10.2f}\n", name, calls(r.forward_calls),
                     ms(r.forward_s), calls(r.backward_calls), ms(r.backward_s), ms(total_s(r)),
                     whole_s > 0 ? 100 * total_s(r) / whole_s : 0.0,
                     static_cast<double>(r.forward_bytes + r.backward_bytes) * per / 1e6);
}

std::string header(const char* first) {
  return fmt::format("{:<44} {:>8} {:>10} {:>8} {:>10} {:>10} {:>7} {:>10}\n", first, "fwd n",
                     "fwd ms", "bwd n", "bwd ms", "total ms", "share", "alloc MB");
}

// Each module's rows with those of its submodules added (paths are dotted).
std::map<std::string, profile::Row> subtrees(const std::vector<profile::Row>& rows) {
  std::map<std::string, profile::Row> out;
  for (const profile::Row& r : rows) {
    if (r.name.empty()) continue;  // ops outside every module
    std::string path = r.name;
    while (true) {
      profile::Row& t = out[path];
      t.forward_calls += r.forward_calls;
      t.backward_calls += r.backward_calls;
      t.forward_s += r.forward_s;
      t.backward_s += r.backward_s;
      t.forward_bytes += r.forward_bytes;
      t.backward_bytes += r.backward_bytes;
      if (path == "(model)") break;
      const size_t dot = path.rfind('.');
      path = dot == std::string::npos ? "(model)" : path.substr(0, dot);
    }
  }
  return out;
}

// The tables of a recording; `module_order`: the module paths in tree order.
std::string report(const profile::Recording& recording, const ProfileRun& run,
                   const std::vector<std::string>& module_order) {
  const double per = 1.0 / static_cast<double>(std::max<int64_t>(run.updates, 1));
  const double profiled = recording.seconds * per;
  std::string out = fmt::format(
      "profile: {} updates on {} after {} warm-up updates; an update takes {:.3f} ms profiled, "
      "{:.3f} ms without the profiler ({:+.1f}%)\n\n",
      run.updates, run.device.str(), run.warmup, 1e3 * profiled, 1e3 * run.plain_update_s,
      run.plain_update_s > 0 ? 100 * (profiled / run.plain_update_s - 1) : 0.0);

  std::vector<profile::Row> ops = recording.ops;
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return total_s(a) > total_s(b); });
  double listed = 0;
  out += header("op, or (time outside ops)");
  for (const profile::Row& r : ops) {
    out += line(r.name, r, per, recording.seconds);
    listed += total_s(r);
  }
  out += fmt::format("{:<44} {:>8} {:>10} {:>8} {:>10} {:10.3f} {:6.1f}%\n\n", "all rows", "", "",
                     "", "", 1e3 * listed * per,
                     recording.seconds > 0 ? 100 * listed / recording.seconds : 0.0);

  const std::map<std::string, profile::Row> trees = subtrees(recording.modules);
  out += header("module (with its submodules)");
  for (const std::string& path : module_order) {
    const auto found = trees.find(path);
    if (found != trees.end()) out += line(path, found->second, per, recording.seconds);
  }
  for (const profile::Row& r : recording.modules)
    if (r.name.empty()) out += line("(outside the model's modules)", r, per, recording.seconds);
  if (run.device.is_cuda())
    out += fmt::format("\ndevice-to-host copies: {} ({:.1f} per update)\n",
                       recording.device_to_host_copies,
                       static_cast<double>(recording.device_to_host_copies) * per);
  return out;
}

}  // namespace

std::string profile_updates(const Module& model, const ProfileRun& run,
                            const std::function<void()>& update) {
  std::map<const void*, std::string> modules;
  std::vector<std::string> order;
  for (const auto& [path, module] : model.named_modules()) {
    order.push_back(path.empty() ? "(model)" : path);
    modules[module] = order.back();
  }
  profile::start(run.device, modules);
  try {
    for (int64_t i = 0; i < run.updates; ++i) update();
  } catch (...) {
    profile::stop();
    throw;
  }
  profile::mark("between updates");
  return report(profile::stop(), run, order);
}

}  // namespace relpos
