// Registry<Base, Args...>: builds objects by name (as tiny-cuda-nn's factories). Each variant
// registers itself from its own file with one line, so adding one never edits a central list;
// an unknown name fails listing the known ones. The registries of layers/ are linked whole
// (WHOLE_ARCHIVE in layers/CMakeLists.txt) so no registration is dropped by the linker.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace relpos {

template <typename Base, typename... Args>
class Registry {
 public:
  using Factory = std::function<std::shared_ptr<Base>(Args...)>;

  // `kind` names the registry in errors ("attention", "positional", "feature_map").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // Returns true so a registration can initialize a namespace-scope constant.
  bool add(const std::string& name, Factory factory) {
    RELPOS_CHECK(!factories_.count(name), kind_, "'{}' is registered twice", name);
    factories_[name] = std::move(factory);
    return true;
  }

  bool contains(const std::string& name) const { return factories_.count(name) != 0; }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : factories_) out.push_back(entry.first);
    return out;
  }

  std::shared_ptr<Base> make(const std::string& name, Args... args) const {
    auto it = factories_.find(name);
    RELPOS_CHECK(it != factories_.end(), kind_, "unknown {} '{}'; known: {}", kind_, name,
                 fmt::join(names(), ", "));
    return it->second(std::forward<Args>(args)...);
  }

 private:
  std::string kind_;
  std::map<std::string, Factory> factories_;
};

}  // namespace relpos

#define RELPOS_REGISTRY_CONCAT_(a, b) a##b
#define RELPOS_REGISTRY_CONCAT(a, b) RELPOS_REGISTRY_CONCAT_(a, b)
