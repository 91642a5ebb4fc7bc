#include "tools/relpos/output_checks.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace relpos::cli {

void check_not_an_input(const std::string& option, const std::string& output,
                        std::initializer_list<std::string> inputs) {
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    if (output.empty() || input.empty()) continue;
    std::error_code ec, ec_out, ec_in;  // equivalent() fails for a path that does not exist yet
    const bool same = (fs::equivalent(output, input, ec) && !ec) ||
                      fs::weakly_canonical(fs::absolute(output), ec_out) ==
                          fs::weakly_canonical(fs::absolute(input), ec_in);
    if (same && !ec_out && !ec_in)
      fail(option,
           "'{}' is the same file as '{}', which this command reads or writes too; give "
           "another path",
           output, input);
  }
}

}  // namespace relpos::cli
