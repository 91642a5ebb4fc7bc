// Options: a component's settings as written under its YAML mapping (`attention: {type: linear,
// feature_map: dpfp, nu: 2}`): key -> scalar text or a list of scalars. Reads are typed and
// tracked, so after a component is built every key it never read is refused by name
// (check_all_used), listing the keys it knows. A read with a fallback also records that fallback,
// so a run can write down what every key it left out meant (defaults()). Copies share one state
// (and one read record); with() makes an independent one.
#pragma once

#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace relpos {

// Reads a scalar as every config key is read, here and by the config's sections: bool (true,
// True, yes, on, 1 / false, False, no, off, 0), integers (decimal), finite decimal numbers
// (1e-3, -.5, +2.0; not C's 0x1p-10), text. False when `text` is not a T. Defined for
// std::string, bool, int64_t, int, double.
template <typename T>
bool parse_scalar(const std::string& text, T& out);
// The text a config holds for `value`, which parse_scalar reads back as the same value (numbers
// in their shortest exact form, bools as true / false).
template <typename T>
std::string scalar_text(const T& value);

class Options {
 public:
  // `where` names the mapping in errors, e.g. "attention" or "model.positional".
  explicit Options(std::string where = "options");

  Options& set(const std::string& key, std::string scalar);
  Options& set_list(const std::string& key, std::vector<std::string> list);
  template <typename T>
  requires std::is_arithmetic_v<T> Options& set(const std::string& key, T number) {
    return set(key, fmt::format("{}", number));
  }
  Options& set(const std::string& key, const char* scalar) { return set(key, std::string(scalar)); }
  // A key written with no value (YAML null: `feature_map: ~`, or `{type:linear}`, which YAML
  // reads as the key `type:linear` with none): reads give their fallback, as for a key left out,
  // but a key nothing reads is refused by check_all_used like any other.
  Options& set_no_value(const std::string& key);

  // A copy with `key` set to `scalar`, leaving this mapping as it is (a default a component adds,
  // e.g. the model's attention dropout). The copy has its own values, but its reads are also
  // recorded here, so check_all_used on either refuses only keys nothing read.
  Options with(const std::string& key, std::string scalar) const;

  // An independent copy: the same values, its own read record (a config copied as a value).
  Options clone() const;

  // Whether `key` has a value (a key written with none has not).
  bool has(const std::string& key) const;
  bool empty() const;
  const std::string& where() const;

  // The value of `key` as T (std::string, bool, int64_t, int, double), or `fallback` when
  // absent. A value that does not parse as T is an error naming the key and the text.
  template <typename T>
  T get(const std::string& key, const T& fallback) const;
  // The same, where the fallback is another setting's value (the model's attention dropout or
  // max_len, the run's length): not recorded as a default, since writing it down would keep it
  // when that setting changes.
  template <typename T>
  T get_inherited(const std::string& key, const T& inherited) const;
  template <typename T>
  std::vector<T> get_list_inherited(const std::string& key, const std::vector<T>& inherited) const;
  // An integer `key` that sizes something (a window, a count of features): `fallback` when
  // absent; "[where] key must be >= least, got v" below `least`, "[where] key v is larger than
  // any machine holds (at most 2^40)" above kLargestSize (core/shape.h).
  int64_t get_size(const std::string& key, int64_t fallback, int64_t least = 1) const;
  // The value of `key`, which must be present.
  template <typename T>
  T require(const std::string& key) const;
  // A list (a scalar counts as a one-element list), or `fallback` when absent.
  template <typename T>
  std::vector<T> get_list(const std::string& key, const std::vector<T>& fallback) const;

  // Throws "[where] unknown option 'x'; known: a, b, c" for the first key never read (with
  // unknown_key_hint's words where the key holds a colon).
  void check_all_used() const;
  // The keys present (with a value or not) but never read, and every key asked for (present or
  // not), each sorted: for a reader that reports unknown keys in its own words (train/config.cpp).
  std::vector<std::string> unread() const;
  std::vector<std::string> asked() const;

  // A value as written: a scalar's text, or a list of them.
  struct Value {
    bool is_list = false;
    std::string scalar;
    std::vector<std::string> list;
  };
  // The fallback of every key read with one (get, get_list), present or not, as text: what the
  // key means when the mapping leaves it out. A key read with two different fallbacks is left
  // out: its readers give its absence different meanings, so no one value can stand for it.
  std::map<std::string, Value> defaults() const;
  // The value of a key that is present.
  const Value* value(const std::string& key) const;

 private:
  struct State {
    std::string where;
    std::map<std::string, Value> values;
    std::set<std::string> no_value;          // keys written with no value (set_no_value)
    std::set<std::string> read;              // every key asked for, present or not
    std::map<std::string, Value> fallbacks;  // get / get_list: the fallback each key was read with
    std::set<std::string> ambiguous;         // keys read with different fallbacks
    std::shared_ptr<State> parent;           // with(): reads are recorded there too
  };
  const Value* lookup(const std::string& key) const;
  void record_fallback(const std::string& key, const Value& fallback) const;
  std::shared_ptr<State> state_;
};

// " (YAML ...)" when an unknown `key` holds a colon not followed by a space (`type:linear`: YAML
// takes the whole text as one key with no value), else "": appended to unknown-key errors.
std::string unknown_key_hint(const std::string& key);

}  // namespace relpos
