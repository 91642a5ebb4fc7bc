// The relpos command line: its subcommands (tools/relpos/commands.h), parsed by cli::Program
// (tools/command_line/command_line.h), which turns parse errors into one-line relpos errors.
#include <string>

#include "core/comm/comm.h"
#include "tools/command_line/command_line.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

int run_relpos(const std::vector<std::string>& args) {
  Program program("relpos: transformers with relative positional encodings, trained and evaluated",
                  "relpos");
  program.version(
      [] { return std::string("relpos ") + RELPOS_VERSION + "\nprocesses: " + comm::backend(); });
  Command app = program.root();
  app.footer(std::function<std::string()>([] {
    return "relpos COMMAND --help for each command's options.\n" + registered_names_help();
  }));
  int status = 0;
  add_train_command(app, status);
  add_eval_command(app, status);
  add_generate_command(app, status);
  add_reproduce_command(app, status, args);
  add_data_command(app, status);
  add_bench_command(app, status);
  add_list_command(app, status);
  add_import_command(app, status);
  add_export_command(app, status);
  return program.run_commands(args, status);
}

}  // namespace relpos::cli
