// `relpos data prepare` by name (datasets/prepare.h), read from the dataset registry.
#include "datasets/prepare.h"

#include "datasets/dataset_registry.h"

namespace relpos {

Preparer find_preparer(const std::string& name) {
  return dataset_registry().contains(name) ? dataset_registry().at(name).prepare : Preparer();
}

std::string download_instructions(const std::string& name) {
  return dataset_registry().at(name, "data prepare").how_to_get;
}

}  // namespace relpos
