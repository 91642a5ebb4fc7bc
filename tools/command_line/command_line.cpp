// The handles of command_line.h on CLI11.
#include "tools/command_line/command_line.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/error.h"

namespace relpos::cli {

namespace {

// A number above 0 (positive) or at least 0 (non_negative); CLI11's own range checks would print
// the whole range of a double in their message. `text` must be all number.
CLI::Validator number_check(bool zero_allowed) {
  const char* what = zero_allowed ? "NONNEGATIVE" : "POSITIVE";
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "expected a number, got '" + text + "'";
        if (zero_allowed ? value >= 0 : value > 0) return "";
        return std::string("must be ") + (zero_allowed ? ">= 0" : "positive") + ", got " + text;
      },
      what);
}

// "train", "bench attention": the subcommands selected on the command line.
std::string selected_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += (path.empty() ? "" : " ") + at->get_name();
  }
  return path;
}

// Every option and positional of `app` and its subcommands that takes a value refuses an empty
// one.
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
  std::string path = app.get_name();
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
    path = path == app.get_name() ? word : path + " " + word;
  }
}

}  // namespace

Option& Option::type_name(const std::string& name) {
  option_->type_name(name);
  return *this;
}

Option& Option::required() {
  option_->required();
  return *this;
}

Option& Option::capture_default_str() {
  option_->capture_default_str();
  return *this;
}

Option& Option::allow_extra_args(bool allow) {
  option_->allow_extra_args(allow);
  return *this;
}

Option& Option::needs(const Option& other) {
  option_->needs(other.option_);
  return *this;
}

Option& Option::excludes(const Option& other) {
  option_->excludes(other.option_);
  return *this;
}

Option& Option::check_positive() {
  option_->check(number_check(false));
  return *this;
}

Option& Option::check_non_negative() {
  option_->check(number_check(true));
  return *this;
}

Option& Option::check_one_of(const std::vector<std::string>& values) {
  option_->check(CLI::IsMember(values));
  return *this;
}

Command Command::add_subcommand(const std::string& name, const std::string& description) {
  return Command(app_->add_subcommand(name, description));
}

Command& Command::require_subcommand() {
  app_->require_subcommand(1);
  return *this;
}

Command& Command::footer(const std::string& text) {
  app_->footer(text);
  return *this;
}

Command& Command::footer(std::function<std::string()> text) {
  app_->footer(std::move(text));
  return *this;
}

template <typename T>
Option Command::add_option(const std::string& name, T& value, const std::string& description) {
  return Option(app_->add_option(name, value, description));
}
template Option Command::add_option(const std::string&, std::string&, const std::string&);
template Option Command::add_option(const std::string&, int&, const std::string&);
template Option Command::add_option(const std::string&, int64_t&, const std::string&);
template Option Command::add_option(const std::string&, uint64_t&, const std::string&);
template Option Command::add_option(const std::string&, double&, const std::string&);
template Option Command::add_option(const std::string&, std::vector<std::string>&,
                                    const std::string&);

Option Command::add_flag(const std::string& name, bool& value, const std::string& description) {
  return Option(app_->add_flag(name, value, description));
}

Option Command::add_flag_callback(const std::string& name, std::function<void()> on,
                                  const std::string& description) {
  return Option(app_->add_flag_callback(name, std::move(on), description));
}

Command& Command::allow_extras() {
  app_->allow_extras();
  return *this;
}

std::vector<std::string> Command::remaining() const {
  return app_->remaining();
}

Command& Command::callback(std::function<void()> run) {
  app_->callback(std::move(run));
  return *this;
}

Program::Program(const std::string& description, const std::string& name)
    : app_(std::make_unique<CLI::App>(description, name)) {
  app_->get_formatter()->label("Usage", "usage");
}

Program& Program::version(std::function<std::string()> text) {
  app_->set_version_flag("--version", std::move(text));
  return *this;
}

Program::~Program() = default;

Command Program::root() {
  return Command(app_.get());
}

int Program::run(int argc, char** argv, const std::function<int()>& body) {
  const std::string& name = app_->get_name();
  try {
    app_->parse(argc, argv);
  } catch (const CLI::Success&) {  // --help
    std::fputs(app_->help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", name.c_str(), e.what(), name.c_str());
    return 2;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return 2;
  }
}

int Program::run_commands(const std::vector<std::string>& args, const int& status) {
  CLI::App& app = *app_;
  const std::string& name = app.get_name();
  refuse_empty_values(app);
  if (args.empty()) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  RELPOS_CHECK(args[0] != "--version" || args.size() == 1, name,
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
    fail(path.empty() ? name : path, "{} (see {} {}{}--help)", e.what(), name, path,
         path.empty() ? "" : " ");
  }
  return status;
}

}  // namespace relpos::cli
