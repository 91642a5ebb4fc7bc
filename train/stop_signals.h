// SIGINT (Ctrl-C) and SIGTERM (a scheduler's time limit, `kill`) while a run trains: the first
// asks the run to end after the update under way, as --stop-at-step does there (checkpoints/
// last.h5, from which --resume continues bit-exactly); a second ends the process at once, as the
// signal would have without this. Installed for the update loop only: before it (building the
// model, reading data) and after, the signals keep their default action; one the process was
// started ignoring (nohup, a script's background job) stays ignored.
#pragma once

namespace relpos {

class StopSignals {
 public:
  StopSignals();   // installs the handlers, clearing an earlier request
  ~StopSignals();  // restores the actions they replaced
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received since the handlers were installed (SIGINT or SIGTERM), 0 if none.
  // In a data-parallel job, the first any rank received, so that every rank stops after the
  // same update (a collective there: every rank asks after each update).
  int requested() const;
};

// "SIGINT", "SIGTERM", or "a signal".
const char* signal_name(int signal);

}  // namespace relpos
