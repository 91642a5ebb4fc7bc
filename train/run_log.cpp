// The run's logger (train/run_log.h).
#include "train/run_log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// "[train] cannot write '<path>': <the system's reason>" from spdlog's "... <path>: <reason>".
Error log_write_error(const fs::path& file, const std::string& spdlog_message) {
  const size_t colon = spdlog_message.rfind(": ");
  return Error(
      fmt::format("[train] cannot write '{}': {}", file.string(),
                  colon == std::string::npos ? spdlog_message : spdlog_message.substr(colon + 2)));
}

}  // namespace

std::shared_ptr<spdlog::logger> make_rank_logger() {
  auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  err->set_pattern("%v");
  err->set_level(spdlog::level::err);
  return std::make_shared<spdlog::logger>("relpos", err);
}

std::shared_ptr<spdlog::logger> make_run_logger(const fs::path& file, bool verbose) {
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file_sink;
  try {
    file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string());
  } catch (const spdlog::spdlog_ex& e) {
    throw log_write_error(file, e.what());
  }
  file_sink->set_pattern("[%Y-%m-%d %H:%M:%S] %v");
  // stderr: everything, or only warnings and errors when quiet.
  auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  err->set_pattern("%v");
  err->set_level(verbose ? spdlog::level::trace : spdlog::level::warn);
  std::vector<spdlog::sink_ptr> sinks{file_sink, err};
  auto logger = std::make_shared<spdlog::logger>("relpos", sinks.begin(), sinks.end());
  logger->flush_on(spdlog::level::info);
  // A failed write of log.txt (spdlog reports it here instead of throwing) stops the run like
  // any other failed write. spdlog's outer catch hands the thrown error back once more: kept.
  auto thrown = std::make_shared<std::string>();
  logger->set_error_handler([file, thrown](const std::string& message) {
    if (!thrown->empty() && message == *thrown) throw Error(message);
    const Error error = log_write_error(file, message);
    *thrown = error.what();
    throw error;
  });
  return logger;
}

void log_to_file_only(spdlog::logger& logger, const std::string& message) {
  for (const spdlog::sink_ptr& sink : logger.sinks()) {
    if (std::dynamic_pointer_cast<spdlog::sinks::basic_file_sink_mt>(sink) == nullptr) continue;
    spdlog::logger file_only("relpos", sink);
    file_only.set_error_handler([](const std::string&) {});
    file_only.error("{}", message);
    file_only.flush();
  }
}

}  // namespace relpos
