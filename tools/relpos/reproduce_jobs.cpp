// `relpos reproduce --jobs N` (reproduce_runs.h Grid::run_in_processes): the runs of a grid
// trained N at a time, each by a child `relpos train` of the same configuration the in-process
// run gets, with OpenMP's threads shared out (N runs of one thread each on N cores: small
// models use one core better than two, so a grid of them ends sooner). A run's console goes to
// <run dir>.log, kept when the run fails and named in the table.
#include <fcntl.h>
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "tools/relpos/reproduce_runs.h"

namespace relpos::cli {

namespace fs = std::filesystem;

namespace {

// This program, which the children run.
fs::path self_program() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  RELPOS_CHECK(!error, "reproduce", "--jobs: cannot find this program (/proc/self/exe: {})",
               error.message());
  return self;
}

// The environment with OMP_NUM_THREADS set to `threads`.
std::vector<std::string> child_environment(int threads) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0) env.emplace_back(*e);
  env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Starts `args` with stdout and stderr in `console`; the child's pid.
pid_t spawn(std::vector<std::string> args, std::vector<std::string> env, const fs::path& console) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, console.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const std::vector<char*> argv = pointers(args), envp = pointers(env);
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  RELPOS_CHECK(rc == 0, "reproduce", "cannot start {}: {}", args[0], std::strerror(rc));
  return pid;
}

// The last non-empty line of a child's console: its error, when it failed.
std::string last_line(const fs::path& console) {
  std::ifstream in(console);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.empty() ? "(no output)" : last;
}

// Waits for any child; its pid and how it ended (EINTR retried).
std::pair<pid_t, int> wait_child() {
  int status = 0;
  pid_t pid = 0;
  do pid = waitpid(-1, &status, 0);
  while (pid < 0 && errno == EINTR);
  RELPOS_CHECK(pid > 0, "reproduce", "waiting for a run: {}", std::strerror(errno));
  return {pid, status};
}

}  // namespace

size_t next_pending(const std::vector<PendingRun>& pending, const std::vector<bool>& started,
                    const std::map<const Cell*, double>& seconds) {
  std::map<const Cell*, bool> cell_started;
  for (size_t i = 0; i < pending.size(); ++i) cell_started[pending[i].cell] |= started[i];
  // (tier, -seconds): tier 0 a cell not started, 1 a cell still on its first run, 2 measured.
  size_t best = pending.size();
  std::pair<int, double> best_key;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (started[i]) continue;
    const Cell* cell = pending[i].cell;
    const auto measured = seconds.find(cell);
    const std::pair<int, double> key = !cell_started[cell] ? std::pair{0, 0.0}
                                       : measured == seconds.end()
                                           ? std::pair{1, 0.0}
                                           : std::pair{2, -measured->second};
    if (best == pending.size() || key < best_key) best = i, best_key = key;
  }
  return best;
}

void Grid::run_in_processes(const std::vector<PendingRun>& pending, std::vector<Row>& rows,
                            TableReport& report) const {
  const fs::path program = self_program();
  const int threads = std::max(1, omp_get_max_threads() / static_cast<int>(o.jobs));
  const std::vector<std::string> env = child_environment(threads);
  std::map<pid_t, std::pair<const PendingRun*, std::chrono::steady_clock::time_point>> running;
  std::vector<bool> started(pending.size(), false);
  std::map<const Cell*, std::vector<double>> times;  // each cell's finished runs, in seconds
  std::map<const Cell*, double> seconds;             // their means
  size_t unstarted = pending.size();
  int64_t left = static_cast<int64_t>(pending.size());  // runs not yet finished
  while (unstarted > 0 || !running.empty()) {
    while (unstarted > 0 && static_cast<int64_t>(running.size()) < o.jobs) {
      const size_t next = next_pending(pending, started, seconds);
      started[next] = true;
      --unstarted;
      const PendingRun& run = pending[next];
      progress(run.number, *run.cell, run.seed, false, report, left);
      std::vector<std::string> args{program.string(), "train", run.cell->config, "--quiet"};
      std::vector<std::string> sets = cell_overrides(
          *run.cell, scale, run.seed, run_placement(*run.cell, run.seed, o, scale, run.dir));
      for (std::string& s : sets) {
        args.emplace_back("--set");
        args.push_back(std::move(s));
      }
      const fs::path last = run.dir / "checkpoints" / "last.h5";
      if (o.resume && fs::exists(last)) {
        args.emplace_back("--resume");
        args.push_back(last.string());
      } else {
        args.emplace_back("--overwrite");  // a run never started afresh over half a run
      }
      fs::create_directories(run.dir.parent_path());
      running[spawn(args, env, run.dir.string() + ".log")] = {&run,
                                                              std::chrono::steady_clock::now()};
    }
    const auto [pid, status] = wait_child();
    const auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of the runs
    const PendingRun& run = *it->second.first;
    std::vector<double>& cell_times = times[run.cell];
    cell_times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.second)
            .count());
    double total = 0;
    for (const double t : cell_times) total += t;
    seconds[run.cell] = total / static_cast<double>(cell_times.size());
    running.erase(it);
    --left;
    const fs::path console = run.dir.string() + ".log";
    RunOutcome r;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      r = read_summary(run.dir / "summary.json");
      fs::remove(console);
    } else {
      r.problem = fmt::format("failed ({}): {} (its console: {})",
                              WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                                : fmt::format("signal {}", WTERMSIG(status)),
                              last_line(console), console.string());
    }
    record(r, true, &run, report);
    rows[run.row].runs[run.seed] = r;
  }
}

}  // namespace relpos::cli
