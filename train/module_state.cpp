// capture_state / restore_module / restore_optimizer (module_state.h).
#include "train/module_state.h"

#include <map>
#include <set>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

namespace {

// Entries by name; an in-memory CheckpointData could list a name twice.
template <typename T>
std::map<std::string, const T*> by_name(const std::vector<std::pair<std::string, T>>& entries,
                                        const char* kind) {
  std::map<std::string, const T*> out;
  for (const auto& [name, value] : entries)
    RELPOS_CHECK(out.emplace(name, &value).second, "checkpoint", "{} '{}' is given twice", kind,
                 name);
  return out;
}

// Every name the model has is in the checkpoint and every checkpoint entry is one the model has.
template <typename T>
void check_names(const std::vector<std::string>& model, const std::map<std::string, T>& saved,
                 const char* kind, bool missing_allowed = false) {
  for (const std::string& name : model)
    RELPOS_CHECK(missing_allowed || saved.count(name) == 1, "checkpoint",
                 "{} '{}' is missing from the checkpoint", kind, name);
  const std::set<std::string> known(model.begin(), model.end());
  for (const auto& entry : saved)
    RELPOS_CHECK(known.count(entry.first) == 1, "checkpoint",
                 "the checkpoint has {} '{}', which the model does not have", kind, entry.first);
}

template <typename T>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, T>>& entries) {
  std::vector<std::string> out;
  for (const auto& entry : entries) out.push_back(entry.first);
  return out;
}

// The model's tensor `current` can take the checkpoint's `saved`: the same shape, and the same
// dtype or, for evaluation (`any_float`), another floating one (f32 and f64 convert).
void check_fits(const char* kind, const std::string& name, const Tensor& saved,
                const Tensor& current, bool any_float) {
  RELPOS_CHECK(saved.defined(), "checkpoint", "{} '{}' is an undefined tensor in the checkpoint",
               kind, name);
  RELPOS_CHECK(saved.dtype() == current.dtype() ||
                   (any_float && is_floating(saved.dtype()) && is_floating(current.dtype())),
               "checkpoint", "{} '{}' is {} in the checkpoint, the model expects {}", kind, name,
               dtype_name(saved.dtype()), dtype_name(current.dtype()));
  RELPOS_CHECK(saved.shape() == current.shape(), "checkpoint",
               "{} '{}' has shape {} in the checkpoint, the model expects {}", kind, name,
               shape_str(saved.shape()), shape_str(current.shape()));
}

// A copy of `t` on `device` that shares no storage with the checkpoint data.
Tensor copy_to(const Tensor& t, Device device) {
  return t.device() == device ? t.clone() : t.to(device);
}

// The checkpoint's `saved` as the model's `current` holds it: its device and dtype.
Tensor fitted(const Tensor& saved, const Tensor& current) {
  return cast(copy_to(saved, current.device()), current.dtype());
}

void check_optimizer_params(const Optimizer& optimizer,
                            const std::vector<std::pair<std::string, Var>>& named) {
  const std::vector<Var>& params = optimizer.params();
  RELPOS_CHECK(params.size() == named.size(), "checkpoint",
               "the optimizer holds {} parameters, the module has {}; build the optimizer from "
               "module.parameters()",
               params.size(), named.size());
  for (size_t i = 0; i < params.size(); ++i)
    RELPOS_CHECK(params[i].impl() == named[i].second.impl(), "checkpoint",
                 "the optimizer's parameter {} is not the module's parameter '{}'; build the "
                 "optimizer from module.parameters() (after module.to())",
                 i, named[i].first);
}

}  // namespace

CheckpointData capture_state(Module& module, const Optimizer* optimizer) {
  CheckpointData data;
  const std::vector<std::pair<std::string, Var>> named = module.named_parameters();
  for (const auto& [name, var] : named) data.params.emplace_back(name, var.value());
  for (const auto& [name, slot] : module.buffer_slots()) data.buffers.emplace_back(name, *slot);
  for (const auto& [name, slot] : module.generator_slots())
    data.generators.emplace_back(name, *slot);
  for (const auto& [name, slot] : module.counter_slots()) data.counters.emplace_back(name, *slot);
  if (optimizer != nullptr) {
    check_optimizer_params(*optimizer, named);
    for (size_t i = 0; i < named.size(); ++i)
      data.optimizer.emplace_back(named[i].first, optimizer->state()[i]);
  }
  return data;
}

void restore_module(Module& module, const CheckpointData& data, bool for_training) {
  // Check everything first, so a refused checkpoint leaves the module as it was.
  std::vector<std::pair<std::string, Var>> params = module.named_parameters();
  const auto saved_params = by_name(data.params, "parameter");
  check_names(names_of(params), saved_params, "parameter");
  for (const auto& [name, var] : params) {
    const Tensor& saved = *saved_params.at(name);
    check_fits("parameter", name, saved, var.value(), !for_training);
    RELPOS_CHECK(all_finite(saved), "checkpoint",
                 "parameter '{}' holds NaN or Inf values: the weights diverged before this "
                 "checkpoint was written",
                 name);
  }

  const std::vector<std::pair<std::string, Tensor*>> buffers = module.buffer_slots();
  const auto saved_buffers = by_name(data.buffers, "buffer");
  check_names(names_of(buffers), saved_buffers, "buffer");
  for (const auto& [name, slot] : buffers)
    if (slot->defined()) check_fits("buffer", name, *saved_buffers.at(name), *slot, !for_training);

  const std::vector<std::pair<std::string, Generator*>> generators = module.generator_slots();
  const auto saved_generators = by_name(data.generators, "generator");
  for (const auto& [name, slot] : generators)
    RELPOS_CHECK(!for_training || saved_generators.count(name) == 1, "checkpoint",
                 "generator '{}' is missing from the checkpoint: the model has a part that draws "
                 "which the checkpoint's run did not have; resume with the configuration it was "
                 "trained with",
                 name);
  check_names(names_of(generators), saved_generators, "generator", true);

  const std::vector<std::pair<std::string, int64_t*>> counters = module.counter_slots();
  const auto saved_counters = by_name(data.counters, "counter");
  check_names(names_of(counters), saved_counters, "counter");

  for (auto& [name, var] : params) var.set_value(fitted(*saved_params.at(name), var.value()));
  for (const auto& [name, slot] : buffers) {
    const Tensor& saved = *saved_buffers.at(name);
    *slot = slot->defined() ? fitted(saved, *slot) : copy_to(saved, Device::cpu());
  }
  for (const auto& [name, slot] : generators)
    if (saved_generators.count(name) == 1) *slot = *saved_generators.at(name);
  for (const auto& [name, slot] : counters) *slot = *saved_counters.at(name);
}

void restore_optimizer(Optimizer& optimizer, const Module& module, const CheckpointData& data) {
  const std::vector<std::pair<std::string, Var>> params = module.named_parameters();
  check_optimizer_params(optimizer, params);
  RELPOS_CHECK(!data.optimizer.empty() || params.empty(), "checkpoint",
               "the checkpoint has no optimizer state");
  const auto saved = by_name(data.optimizer, "optimizer state for parameter");
  check_names(names_of(params), saved, "optimizer state for parameter");
  std::vector<Optimizer::State> states(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Device device = params[i].second.device();
    for (const auto& [key, t] : *saved.at(params[i].first)) {
      RELPOS_CHECK(t.defined(), "checkpoint", "optimizer state '{}/{}' is an undefined tensor",
                   params[i].first, key);
      states[i][key] = copy_to(t, t.dim() == 0 ? Device::cpu() : device);
    }
  }
  optimizer.state() = std::move(states);
}

}  // namespace relpos
