// Command lines of relpos and the relpos_bench_* programs: subcommands, options, flags and
// their --help, defined through these small handles. CLI11 parses and writes the help behind
// them, compiled in command_line.cpp only: its header costs every source that includes it 8-15 s
// of compile time (it defines its validators and formatters in each), and twenty-one sources
// defined options or parsed. The names follow CLI11's, whose documentation describes each call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace relpos::cli {

// One option or flag of a command.
class Option {
 public:
  explicit Option(CLI::Option* option) : option_(option) {}
  Option& type_name(const std::string& name);  // the value's placeholder in --help
  Option& required();
  // The default shown in --help: the variable's value when the option was defined.
  Option& capture_default_str();
  // false: one value per occurrence (`--set a=1 --set b=2`, and a positional may follow).
  Option& allow_extra_args(bool allow);
  Option& needs(const Option& other);     // refused without `other`
  Option& excludes(const Option& other);  // refused together with `other`
  // Value checks: a value that fails is a command-line error naming the option; --help shows
  // POSITIVE, NONNEGATIVE or the set.
  Option& check_positive();      // a number > 0
  Option& check_non_negative();  // a number >= 0
  Option& check_one_of(const std::vector<std::string>& values);

 private:
  CLI::Option* option_;
};

// A program or one of its subcommands.
class Command {
 public:
  explicit Command(CLI::App* app) : app_(app) {}
  Command add_subcommand(const std::string& name, const std::string& description);
  Command& require_subcommand();  // exactly one of its subcommands
  Command& footer(const std::string& text);
  Command& footer(std::function<std::string()> text);  // made when --help is printed
  // T: std::string, int, int64_t, uint64_t, double or std::vector<std::string> (repeatable);
  // the value is written when the command line is parsed. `name`: "--flag" or a positional.
  template <typename T>
  Option add_option(const std::string& name, T& value, const std::string& description);
  Option add_flag(const std::string& name, bool& value, const std::string& description);
  Option add_flag_callback(const std::string& name, std::function<void()> on,
                           const std::string& description);
  Command& allow_extras();  // unknown options are left for remaining()
  std::vector<std::string> remaining() const;
  Command& callback(std::function<void()> run);  // runs when this command was given

 private:
  CLI::App* app_;
};

// A program: `root()` defines its options (and subcommands), `run` parses the command line of a
// program of one command (the relpos_bench_* programs), `run_commands` that of a program of
// subcommands (relpos). Their --help starts "usage: NAME".
class Program {
 public:
  Program(const std::string& description, const std::string& name);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  Command root();
  Program& version(std::function<std::string()> text);  // --version prints text()

  // Parses argv; --help prints the help and returns 0; a bad command line prints
  // "<name>: <cause> (see <name> --help)" on stderr and returns 2. Otherwise returns body()'s
  // status, or 2 with "<name>: <cause>" when it throws.
  int run(int argc, char** argv, const std::function<int()>& body);

  // Parses `args` (argv after the program's name) and runs the selected commands' callbacks,
  // then returns `status` as they left it. No arguments: the help on stderr, 2. --help and
  // --version print and return 0. A bad command line throws relpos::Error "[<command path>]
  // <cause> (see <name> <command path> --help)", also for two cases CLI11 would accept or
  // report vaguely: an empty value (`--out ""`, an unset shell variable; no option has a
  // meaning for it, and the commands would read it as "not given") and a word where a command
  // is expected that names none (the error lists the known ones).
  int run_commands(const std::vector<std::string>& args, const int& status);

 private:
  std::unique_ptr<CLI::App> app_;
};

}  // namespace relpos::cli
