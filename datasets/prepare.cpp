// The datasets `relpos data prepare` makes here, by name (datasets/prepare.h).
#include <map>

#include "datasets/prepare.h"

namespace relpos {

Preparer find_preparer(const std::string& name) {
  static const std::map<std::string, Preparer> table = {
      {"listops", prepare_listops},
      {"mnist", prepare_mnist},
      {"fashion-mnist", prepare_fashion_mnist},
      {"enwik8", prepare_enwik8},
      {"text8", prepare_text8},
      {"moby-dick", prepare_moby_dick},
  };
  const auto it = table.find(name);
  return it == table.end() ? Preparer() : it->second;
}

}  // namespace relpos
