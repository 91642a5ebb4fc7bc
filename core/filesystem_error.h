// What the command line says when the operating system refuses an operation on a path
// (std::filesystem::filesystem_error: a name too long, a loop of symbolic links, no permission):
// the path is the user's to fix, not a bug of relpos's, so it is a user error (exit 2) that names
// the path(s) and the cause.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace relpos {

inline std::string describe_filesystem_error(const std::filesystem::filesystem_error& e) {
  const std::string cause = e.code().message();
  if (e.path1().empty()) return fmt::format("[filesystem] {}", e.what());
  if (e.path2().empty())
    return fmt::format("[filesystem] cannot use '{}': {}", e.path1().string(), cause);
  return fmt::format("[filesystem] cannot use '{}' and '{}': {}", e.path1().string(),
                     e.path2().string(), cause);
}

// Why a path's status could not be read: "no such file", or the system's cause (a name too long,
// no permission) when that is not it.
inline std::string why_missing(const std::error_code& error) {
  return error && error != std::errc::no_such_file_or_directory ? error.message() : "no such file";
}

}  // namespace relpos
