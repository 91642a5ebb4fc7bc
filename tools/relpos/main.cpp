// relpos: the command line (DESIGN §7): train, eval, generate, reproduce, bench attention, data
// prepare, list. Exit status: 0 on success, 2 on a user error (one clear line on stderr), never a
// stack dump.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/error.h"
#include "tools/relpos/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: relpos train CONFIG.yaml [--set key=value]... [--out DIR] [--device cpu|cuda]\n"
    "                    [--resume CHECKPOINT]\n"
    "       relpos eval CHECKPOINT [--data-dir DIR] [--split test] [--json] [--predictions F.h5]\n"
    "       relpos generate CHECKPOINT --prompt TEXT --tokens N [--temperature T] [--seed S]\n"
    "       relpos reproduce table1|table2|table3|figure3|all [--scale cpu|tiny|small|paper] ...\n"
    "       relpos data prepare NAME --out DIR [--key value ...]\n"
    "       relpos bench attention [--lengths 1024,2048,...] [--device cpu|cuda] [--json] ...\n"
    "       relpos list [--combinations]\n"
    "       relpos --version\n"
    "       relpos COMMAND --help\n";

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
      std::FILE* out = args.empty() ? stderr : stdout;
      std::fputs(kUsage, out);
      std::fputs(relpos::cli::registered_names_help().c_str(), out);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
      std::printf("relpos %s\nprocesses: %s\n", RELPOS_VERSION, relpos::comm::backend().c_str());
      return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "train") return relpos::cli::train_command(rest);
    if (args[0] == "eval") return relpos::cli::eval_command(rest);
    if (args[0] == "generate") return relpos::cli::generate_command(rest);
    if (args[0] == "reproduce") return relpos::cli::reproduce_command(rest);
    if (args[0] == "data") return relpos::cli::data_command({args.begin() + 1, args.end()});
    if (args[0] == "bench") return relpos::cli::bench_command(rest);
    if (args[0] == "list") return relpos::cli::list_command(rest);
    std::fprintf(stderr, "relpos: unknown command '%s'\n%s", args[0].c_str(), kUsage);
    return 2;
  } catch (const relpos::Error& e) {
    std::fprintf(stderr, "relpos: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "relpos: internal error: %s\n", e.what());
    return 1;
  }
}
