// StopSignals (stop_signals.h): a handler that only records the signal (async-signal-safe), with
// SA_RESETHAND so that the next one takes the default action, and SA_RESTART so that no system
// call of the run sees EINTR.
#include "train/stop_signals.h"

#include <csignal>
#include <vector>

#include "core/comm/comm.h"
#include "core/ops.h"
#include "core/tensor.h"

namespace relpos {

namespace {

volatile std::sig_atomic_t g_received = 0;
struct sigaction g_previous_int, g_previous_term;

extern "C" void record_signal(int signal) {
  if (g_received == 0) g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
  // A signal the process was started ignoring (nohup, a script's background job) stays ignored.
  if (g_previous_int.sa_handler == SIG_IGN) sigaction(SIGINT, &g_previous_int, nullptr);
  if (g_previous_term.sa_handler == SIG_IGN) sigaction(SIGTERM, &g_previous_term, nullptr);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int StopSignals::requested() const {
  const int mine = g_received;
  if (!comm::distributed()) return mine;
  // Every rank's signal, summed; the first rank's that received one is named.
  Tensor all = zeros({comm::size()}, DType::f64);
  all.data<double>()[comm::rank()] = mine;
  comm::all_reduce_sum(all);
  for (const double s : all.to_vector<double>())
    if (s != 0) return static_cast<int>(s);
  return 0;
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

}  // namespace relpos
