// What the command line says when the operating system refuses an operation on a path
// (std::filesystem::filesystem_error: a name too long, a loop of symbolic links, no permission):
// the path is the user's to fix, not a bug of relpos's, so it is a user error (exit 2) that names
// the path(s) and the cause.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <string>

namespace relpos {

inline std::string describe_filesystem_error(const std::filesystem::filesystem_error& e) {
  const std::string cause = e.code().message();
  if (e.path1().empty()) return fmt::format("[filesystem] {}", e.what());
  if (e.path2().empty())
    return fmt::format("[filesystem] cannot use '{}': {}", e.path1().string(), cause);
  return fmt::format("[filesystem] cannot use '{}' and '{}': {}", e.path1().string(),
                     e.path2().string(), cause);
}

}  // namespace relpos
