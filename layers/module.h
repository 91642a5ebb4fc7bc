// Module: the base of every layer. Registers parameters, buffers and submodules by name in
// insertion order and yields PyTorch-style dotted names ("encoder.layers.3.attn.q_proj.weight"),
// so a checkpoint maps one-to-one onto the equivalent torch.nn model (DESIGN §4).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/profiler.h"
#include "autograd/var.h"
#include "core/device.h"
#include "core/generator.h"

namespace relpos {

class Module {
 public:
  Module() = default;
  // The registry points at members of this object, so a Module is neither copied nor moved;
  // hold modules by shared_ptr.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Every parameter with its dotted name: this module's own first, then each submodule's, depth
  // first in registration order (torch's order). A Var reached twice (a shared submodule) is listed
  // once, under its first name.
  std::vector<std::pair<std::string, Var>> named_parameters() const;
  std::vector<Var> parameters() const;
  // Fixed tensors that move with the module but are not trained (e.g. a sinusoidal table).
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  // Slots a checkpoint saves and restores besides parameters: buffers (assignable), random
  // generators (dropout masks, redrawn features) and integer counters, each under its dotted name,
  // listed once per object even when a submodule is shared.
  std::vector<std::pair<std::string, Tensor*>> buffer_slots();
  std::vector<std::pair<std::string, Generator*>> generator_slots();
  std::vector<std::pair<std::string, int64_t*>> counter_slots();
  // Direct submodules, in registration order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return modules_;
  }

  // Training mode (dropout active) for this module and every submodule; modules start in it.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter and buffer to `device`. A parameter is replaced by a new leaf holding
  // the moved value (requires_grad kept, grad dropped): take parameters() again afterwards. Tied
  // parameters stay tied.
  void to(Device device);
  // Makes the parameter registered under `dotted_name` (here or in a submodule) the Var `shared`,
  // so several modules train one tensor (Transformer-XL's u and v across layers). The member it
  // was registered from now holds `shared`; named_parameters() lists it once, under its first
  // name. Errors when no parameter has that name or the shapes differ.
  void tie_parameter(const std::string& dotted_name, const Var& shared);
  void zero_grad();
  int64_t num_parameters() const;  // total number of elements
  // This module ("") and every submodule by dotted path, depth first in registration order; a
  // module reached twice is listed once, under its first path.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  // While the profiler records (autograd/profiler.h), the ops until the scope ends are this
  // module's: `const auto scope = profile_scope();` opens a module's forward.
  profile::ModuleScope profile_scope() const { return profile::ModuleScope(this); }

 protected:
  // Registers the member `param` (a leaf Var); the registry keeps its address, so re-pointing
  // the member (to(), loading) is seen by named_parameters(). Names: non-empty, no '.'.
  void register_parameter(const std::string& name, Var& param);
  void register_buffer(const std::string& name, Tensor& buffer);
  // A generator whose state must survive a checkpoint for a resumed run to draw what an
  // uninterrupted one would; likewise an integer counter (e.g. calls since a redraw).
  void register_generator(const std::string& name, Generator& gen);
  void register_counter(const std::string& name, int64_t& counter);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_module(name, module);
    return module;
  }

 private:
  void add_module(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  void collect_parameters(const std::string& prefix,
                          std::vector<std::pair<std::string, Var>>& out) const;
  template <typename T, typename Member>
  void collect_slots(const std::string& prefix, Member member,
                     std::vector<std::pair<std::string, T*>>& out);

  std::vector<std::pair<std::string, Var*>> params_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, Generator*>> generators_;
  std::vector<std::pair<std::string, int64_t*>> counters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules_;
  bool training_ = true;
};

// An indexed list of submodules named "0", "1", ... (as torch.nn.ModuleList).
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return children().at(i).second; }
  // The i-th module as its concrete type; errors when it is another type.
  template <typename M>
  std::shared_ptr<M> at(size_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    RELPOS_CHECK(m != nullptr, "module", "ModuleList entry {} is not of the requested type", i);
    return m;
  }
};

}  // namespace relpos
