// The handles of command_line.h on CLI11.
#include "tools/command_line/command_line.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>

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
    : app_(std::make_unique<CLI::App>(description, name)) {}

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

}  // namespace relpos::cli
