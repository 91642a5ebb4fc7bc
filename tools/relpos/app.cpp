// The relpos command line as one CLI11 app (tools/relpos/commands.h): every subcommand's options
// and help, parse errors turned into one-line relpos errors.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/comm/comm.h"
#include "core/error.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

// "train", "bench attention": the subcommands selected on the command line.
std::string selected_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += (path.empty() ? "" : " ") + at->get_name();
  }
  return path;
}

void make_app(CLI::App& app, int& status, const std::vector<std::string>& args) {
  app.get_formatter()->label("Usage", "usage");
  app.footer([] {
    return "relpos COMMAND --help for each command's options.\n" + registered_names_help();
  });
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return std::string("relpos ") + RELPOS_VERSION +
                                "\nprocesses: " + comm::backend();
                       }));
  add_train_command(Command(&app), status);
  add_eval_command(Command(&app), status);
  add_generate_command(Command(&app), status);
  add_reproduce_command(Command(&app), status, args);
  add_data_command(Command(&app), status);
  add_bench_command(Command(&app), status);
  add_list_command(Command(&app), status);
  add_import_command(Command(&app), status);
  add_export_command(Command(&app), status);
}

// Every option and positional that takes a value refuses an empty one (`--out ""`, an unset
// shell variable): none has a meaning for it, and the commands would read it as "not given"
// and take the default.
void refuse_empty_values(CLI::App& app) {
  static const CLI::Validator non_empty(
      [](const std::string& value) {
        return value.empty() ? std::string("needs a value, got an empty one") : std::string();
      },
      "");
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size_max() > 0) option->check(non_empty);
  for (CLI::App* sub : app.get_subcommands({})) refuse_empty_values(*sub);
}

// A word where a command or a subcommand of one is expected (`relpos trian`, `relpos data
// nosuch`) is refused naming the known ones (CLI11 would say "A subcommand is required").
void check_command_names(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  std::string path = "relpos";
  for (const std::string& word : args) {
    const std::vector<const CLI::App*> subs = at->get_subcommands({});
    if (subs.empty() || word.rfind("-", 0) == 0) return;
    std::string known;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : subs) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr)
      fail(path, "unknown {}command '{}'; known: {}", at == &app ? "" : "sub", word, known);
    at = next;
    path = path == "relpos" ? word : path + " " + word;
  }
}

}  // namespace

int run_relpos(const std::vector<std::string>& args) {
  CLI::App app("relpos: transformers with relative positional encodings, trained and evaluated",
               "relpos");
  int status = 0;
  make_app(app, status, args);
  refuse_empty_values(app);
  if (args.empty()) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  RELPOS_CHECK(args[0] != "--version" || args.size() == 1, "relpos",
               "--version takes no other arguments, got '{}'", args[1]);
  check_command_names(app, args);
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::Success& e) {  // --help, --version
    if (e.get_name() == "CallForVersion")
      std::printf("%s\n", e.what());
    else
      std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    const std::string path = selected_path(app);
    fail(path.empty() ? "relpos" : path, "{} (see relpos {}{}--help)", e.what(), path,
         path.empty() ? "" : " ");
  }
  return status;
}

}  // namespace relpos::cli
