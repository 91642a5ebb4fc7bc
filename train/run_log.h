// Where a training run reports (train/trainer.h): log.txt and stderr on the process that owns
// the run, stderr errors only on the other ranks of a data-parallel job (train/distributed.h).
#pragma once

#include <spdlog/logger.h>

#include <filesystem>
#include <memory>
#include <string>

namespace relpos {

// log.txt (every line, time-stamped) and stderr (every line, or warnings and errors only when
// not `verbose`). A write to log.txt that fails stops the run: "[train] cannot write '<file>':
// <the system's reason>".
std::shared_ptr<spdlog::logger> make_run_logger(const std::filesystem::path& file, bool verbose);

// Writes `message` as an error line to the log.txt of a make_run_logger logger alone: why a run
// stopped, when the caller reports the error on stderr itself. A failed write is not reported
// (the run is already stopping with an error of its own).
void log_to_file_only(spdlog::logger& logger, const std::string& message);

// Ranks other than 0 of a data-parallel job: nothing to a file, and only errors to stderr (the
// job reports through rank 0).
std::shared_ptr<spdlog::logger> make_rank_logger();

}  // namespace relpos
