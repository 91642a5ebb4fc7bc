// Options (core/options.h): typed, tracked reads of a component's YAML mapping.
#include "core/options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "core/shape.h"

namespace relpos {
namespace {

bool parse(const std::string& s, std::string& out) {
  out = s;
  return true;
}
bool parse(const std::string& s, bool& out) {
  if (s == "true" || s == "True" || s == "yes" || s == "on" || s == "1") return out = true, true;
  if (s == "false" || s == "False" || s == "no" || s == "off" || s == "0") return out = false, true;
  return false;
}
// Where from_chars starts reading a number: past YAML's optional '+' (from_chars reads '-' only).
const char* number_start(const std::string& s) {
  const bool plus = s.size() > 1 && s[0] == '+' &&
                    (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
  return s.data() + plus;
}
template <typename Int>
bool parse_int(const std::string& s, Int& out) {
  auto [end, ec] = std::from_chars(number_start(s), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}
bool parse(const std::string& s, int64_t& out) {
  return parse_int(s, out);
}
bool parse(const std::string& s, int& out) {
  return parse_int(s, out);
}
// YAML's decimal numbers (an optional sign, digits with an optional point, an optional
// exponent), finite only: no setting takes inf or nan (an inf eps or init std passed every
// ">= 0" check and turned the first loss into NaN, far from its key). C's hexadecimal floats
// (0x1p-10), which strtod reads, are not YAML numbers and are refused as integers are.
bool parse(const std::string& s, double& out) {
  const char* end = s.data() + s.size();
  const auto [stop, ec] = std::from_chars(number_start(s), end, out, std::chars_format::general);
  return ec == std::errc() && stop == end && std::isfinite(out);
}

template <typename T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_integral_v<T>) return "an integer";
  if constexpr (std::is_floating_point_v<T>) return "a finite number";
  return "text";
}

}  // namespace

template <typename T>
bool parse_scalar(const std::string& text, T& out) {
  return parse(text, out);
}

template <typename T>
std::string scalar_text(const T& value) {
  if constexpr (std::is_same_v<T, std::string>)
    return value;
  else if constexpr (std::is_same_v<T, bool>)
    return value ? "true" : "false";
  else
    return fmt::format("{}", value);
}

namespace {

template <typename T>
T parse_or_throw(const std::string& where, const std::string& key, const std::string& text) {
  T out{};
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {  // an integer past T's range
    const auto [end, ec] = std::from_chars(number_start(text), text.data() + text.size(), out);
    RELPOS_CHECK(ec != std::errc::result_out_of_range, where,
                 "option '{}' must be an integer from {} to {}, got '{}'", key,
                 std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), text);
  }
  RELPOS_CHECK(parse_scalar(text, out), where, "option '{}' must be {}, got '{}'", key,
               type_name<T>(), text);
  return out;
}

}  // namespace

Options::Options(std::string where) : state_(std::make_shared<State>()) {
  state_->where = std::move(where);
}

Options& Options::set(const std::string& key, std::string scalar) {
  state_->no_value.erase(key);
  state_->values[key] = Value{false, std::move(scalar), {}};
  return *this;
}

Options& Options::set_list(const std::string& key, std::vector<std::string> list) {
  state_->no_value.erase(key);
  state_->values[key] = Value{true, {}, std::move(list)};
  return *this;
}

Options& Options::set_no_value(const std::string& key) {
  state_->values.erase(key);
  state_->no_value.insert(key);
  return *this;
}

Options Options::with(const std::string& key, std::string scalar) const {
  Options copy = clone();
  copy.state_->parent = state_;
  copy.set(key, std::move(scalar));
  return copy;
}

Options Options::clone() const {
  Options copy(state_->where);
  copy.state_->values = state_->values;
  copy.state_->no_value = state_->no_value;
  return copy;
}

bool Options::has(const std::string& key) const {
  return state_->values.count(key) != 0;
}
bool Options::empty() const {
  return state_->values.empty();
}
const std::string& Options::where() const {
  return state_->where;
}

const Options::Value* Options::lookup(const std::string& key) const {
  for (State* s = state_.get(); s != nullptr; s = s->parent.get()) s->read.insert(key);
  return value(key);
}

void Options::record_fallback(const std::string& key, const Value& fallback) const {
  const auto same = [](const Value& a, const Value& b) {
    return a.is_list == b.is_list && a.scalar == b.scalar && a.list == b.list;
  };
  for (State* s = state_.get(); s != nullptr; s = s->parent.get()) {
    const auto [it, added] = s->fallbacks.emplace(key, fallback);
    if (!added && !same(it->second, fallback)) s->ambiguous.insert(key);
    // A key with() set is the copy's own: its reader's fallback says nothing about the mapping
    // the copy came from.
    if (s->parent != nullptr && s->values.count(key) && !s->parent->values.count(key)) break;
  }
}

std::map<std::string, Options::Value> Options::defaults() const {
  std::map<std::string, Value> out;
  for (const auto& [key, fallback] : state_->fallbacks)
    if (!state_->ambiguous.count(key)) out.emplace(key, fallback);
  return out;
}

const Options::Value* Options::value(const std::string& key) const {
  auto it = state_->values.find(key);
  return it == state_->values.end() ? nullptr : &it->second;
}

template <typename T>
T Options::get(const std::string& key, const T& fallback) const {
  record_fallback(key, Value{false, scalar_text(fallback), {}});
  return get_inherited(key, fallback);
}

template <typename T>
T Options::get_inherited(const std::string& key, const T& inherited) const {
  const Value* v = lookup(key);
  if (v == nullptr) return inherited;
  RELPOS_CHECK(!v->is_list, state_->where, "option '{}' must be a single value, got a list", key);
  return parse_or_throw<T>(state_->where, key, v->scalar);
}

int64_t Options::get_size(const std::string& key, int64_t fallback, int64_t least) const {
  const auto size = get<int64_t>(key, fallback);
  RELPOS_CHECK(size >= least, state_->where, "{} must be >= {}, got {}", key, least, size);
  check_largest_size(state_->where, key, size);
  return size;
}

template <typename T>
T Options::require(const std::string& key) const {
  const Value* v = lookup(key);
  RELPOS_CHECK(v != nullptr, state_->where, "option '{}' is required", key);
  RELPOS_CHECK(!v->is_list, state_->where, "option '{}' must be a single value, got a list", key);
  return parse_or_throw<T>(state_->where, key, v->scalar);
}

template <typename T>
std::vector<T> Options::get_list(const std::string& key, const std::vector<T>& fallback) const {
  Value listed{true, {}, {}};
  for (const T& item : fallback) listed.list.push_back(scalar_text(item));
  record_fallback(key, listed);
  return get_list_inherited(key, fallback);
}

template <typename T>
std::vector<T> Options::get_list_inherited(const std::string& key,
                                           const std::vector<T>& inherited) const {
  const Value* v = lookup(key);
  if (v == nullptr) return inherited;
  if (!v->is_list) return {parse_or_throw<T>(state_->where, key, v->scalar)};
  std::vector<T> out;
  for (const std::string& s : v->list) out.push_back(parse_or_throw<T>(state_->where, key, s));
  return out;
}

void Options::check_all_used() const {
  const std::vector<std::string> unknown = unread();
  if (unknown.empty()) return;
  const std::string known =
      state_->read.empty() ? "(none)" : fmt::format("{}", fmt::join(state_->read, ", "));
  fail(state_->where, "unknown option '{}'; known: {}{}", unknown.front(), known,
       unknown_key_hint(unknown.front()));
}

std::vector<std::string> Options::unread() const {
  std::set<std::string> out;
  for (const auto& [key, value] : state_->values)
    if (!state_->read.count(key)) out.insert(key);
  for (const std::string& key : state_->no_value)
    if (!state_->read.count(key)) out.insert(key);
  return {out.begin(), out.end()};
}

std::string unknown_key_hint(const std::string& key) {
  const size_t colon = key.find(':');
  if (colon == std::string::npos || colon + 1 == key.size() || key[colon + 1] == ' ') return "";
  return fmt::format(" (YAML needs a space after a key's colon: '{}: {}', not '{}')",
                     key.substr(0, colon), key.substr(colon + 1), key);
}

std::vector<std::string> Options::asked() const {
  return {state_->read.begin(), state_->read.end()};
}

#define RELPOS_OPTIONS_INSTANTIATE(T)                                                  \
  template bool parse_scalar<T>(const std::string&, T&);                               \
  template std::string scalar_text<T>(const T&);                                       \
  template T Options::get<T>(const std::string&, const T&) const;                      \
  template T Options::get_inherited<T>(const std::string&, const T&) const;            \
  template std::vector<T> Options::get_list_inherited<T>(const std::string&,           \
                                                         const std::vector<T>&) const; \
  template T Options::require<T>(const std::string&) const;                            \
  template std::vector<T> Options::get_list<T>(const std::string&, const std::vector<T>&) const;
RELPOS_OPTIONS_INSTANTIATE(std::string)
RELPOS_OPTIONS_INSTANTIATE(bool)
RELPOS_OPTIONS_INSTANTIATE(int64_t)
RELPOS_OPTIONS_INSTANTIATE(int)
RELPOS_OPTIONS_INSTANTIATE(double)
#undef RELPOS_OPTIONS_INSTANTIATE

}  // namespace relpos
