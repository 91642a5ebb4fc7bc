// Module registry: dotted names, train/eval propagation, device moves (layers/module.h).
#include "layers/module.h"

#include <unordered_map>
#include <unordered_set>

namespace relpos {

void Module::check_new_name(const std::string& name) const {
  RELPOS_CHECK(!name.empty(), "module", "empty name");
  RELPOS_CHECK(name.find('.') == std::string::npos, "module",
               "name '{}' contains '.', which separates nested names", name);
  bool taken = false;
  for (const auto& [n, p] : params_) taken = taken || n == name;
  for (const auto& [n, b] : buffers_) taken = taken || n == name;
  for (const auto& [n, g] : generators_) taken = taken || n == name;
  for (const auto& [n, c] : counters_) taken = taken || n == name;
  for (const auto& [n, m] : modules_) taken = taken || n == name;
  RELPOS_CHECK(!taken, "module", "name '{}' is already registered", name);
}

void Module::register_parameter(const std::string& name, Var& param) {
  check_new_name(name);
  RELPOS_CHECK(param.defined() && param.is_leaf(), "module",
               "parameter '{}' must be a defined leaf Var", name);
  params_.emplace_back(name, &param);
}

void Module::register_buffer(const std::string& name, Tensor& buffer) {
  check_new_name(name);
  RELPOS_CHECK(buffer.defined(), "module", "buffer '{}' is undefined", name);
  buffers_.emplace_back(name, &buffer);
}

void Module::register_generator(const std::string& name, Generator& gen) {
  check_new_name(name);
  generators_.emplace_back(name, &gen);
}

void Module::register_counter(const std::string& name, int64_t& counter) {
  check_new_name(name);
  counters_.emplace_back(name, &counter);
}

void Module::add_module(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  RELPOS_CHECK(module != nullptr, "module", "submodule '{}' is null", name);
  RELPOS_CHECK(module.get() != this, "module", "submodule '{}' is the module itself", name);
  module->train(training_);
  modules_.emplace_back(name, std::move(module));
}

void Module::collect_parameters(const std::string& prefix,
                                std::vector<std::pair<std::string, Var>>& out) const {
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, *p);
  for (const auto& [name, m] : modules_) m->collect_parameters(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Var>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Var>> all, unique;
  collect_parameters("", all);
  std::unordered_set<const VarImpl*> seen;
  for (auto& entry : all)
    if (seen.insert(entry.second.impl()).second) unique.push_back(std::move(entry));
  return unique;
}

std::vector<Var> Module::parameters() const {
  std::vector<Var> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, b] : buffers_) out.emplace_back(name, *b);
  for (const auto& [name, m] : modules_)
    for (auto& [sub, b] : m->named_buffers()) out.emplace_back(name + "." + sub, b);
  return out;
}

template <typename T, typename Member>
void Module::collect_slots(const std::string& prefix, Member member,
                           std::vector<std::pair<std::string, T*>>& out) {
  for (const auto& [name, slot] : this->*member) out.emplace_back(prefix + name, slot);
  for (const auto& [name, m] : modules_)
    m->template collect_slots<T>(prefix + name + ".", member, out);
}

// Depth-first names with duplicates (a shared submodule) dropped, keeping the first name.
template <typename T>
static std::vector<std::pair<std::string, T*>> unique_slots(
    std::vector<std::pair<std::string, T*>> all) {
  std::vector<std::pair<std::string, T*>> unique;
  std::unordered_set<const T*> seen;
  for (auto& entry : all)
    if (seen.insert(entry.second).second) unique.push_back(std::move(entry));
  return unique;
}

std::vector<std::pair<std::string, Tensor*>> Module::buffer_slots() {
  std::vector<std::pair<std::string, Tensor*>> all;
  collect_slots<Tensor>("", &Module::buffers_, all);
  return unique_slots(std::move(all));
}

std::vector<std::pair<std::string, Generator*>> Module::generator_slots() {
  std::vector<std::pair<std::string, Generator*>> all;
  collect_slots<Generator>("", &Module::generators_, all);
  return unique_slots(std::move(all));
}

std::vector<std::pair<std::string, int64_t*>> Module::counter_slots() {
  std::vector<std::pair<std::string, int64_t*>> all;
  collect_slots<int64_t>("", &Module::counters_, all);
  return unique_slots(std::move(all));
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, m] : modules_) m->train(on);
}

void Module::to(Device device) {
  // Every slot, a shared submodule's twice: one moved Var per original, so ties survive.
  std::vector<std::pair<std::string, Var*>> slots;
  collect_slots<Var>("", &Module::params_, slots);
  std::unordered_map<const VarImpl*, Var> moved;
  for (auto& [name, p] : slots) {
    if (p->device() == device) continue;
    auto it = moved.find(p->impl());
    if (it == moved.end())
      it = moved.emplace(p->impl(), Var(p->value().to(device), p->requires_grad())).first;
    *p = it->second;
  }
  for (auto& [name, b] : buffer_slots())
    if (b->device() != device) *b = b->to(device);
}

void Module::tie_parameter(const std::string& dotted_name, const Var& shared) {
  Module* owner = this;
  std::string rest = dotted_name;
  for (size_t dot = rest.find('.'); dot != std::string::npos && owner != nullptr;
       dot = rest.find('.')) {
    Module* child = nullptr;
    for (auto& [name, m] : owner->modules_)
      if (name == rest.substr(0, dot)) child = m.get();
    owner = child;
    rest = rest.substr(dot + 1);
  }
  for (auto& [name, p] : owner != nullptr ? owner->params_ : params_) {
    if (owner == nullptr || name != rest) continue;
    RELPOS_CHECK(p->shape() == shared.shape(), "module",
                 "cannot tie parameter '{}' of shape {} to a Var of shape {}", dotted_name,
                 p->value().str(), shared.value().str());
    *p = shared;
    return;
  }
  throw Error(fmt::format("[module] no parameter '{}' to tie", dotted_name));
}

void Module::zero_grad() {
  for (auto& [name, p] : params_) p->zero_grad();
  for (auto& [name, m] : modules_) m->zero_grad();
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Var& p : parameters()) n += p.numel();
  return n;
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  std::unordered_set<const Module*> seen;
  // (path, module) pairs still to visit, the next one last.
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [path, module] = stack.back();
    stack.pop_back();
    if (!seen.insert(module).second) continue;
    out.emplace_back(path, module);
    const auto& kids = module->children();
    for (auto it = kids.rbegin(); it != kids.rend(); ++it)
      stack.emplace_back(path.empty() ? it->first : path + "." + it->first, it->second.get());
  }
  return out;
}

}  // namespace relpos
