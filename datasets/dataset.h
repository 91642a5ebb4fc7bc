// What the readers produce: labelled token sequences held in memory (DESIGN §5). Ids are in
// [0, vocab_size); which id pads, and whether 0 is a real token, is each reader's vocabulary
// (written in its header). Retrieval examples carry a second document.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

struct Example {
  std::vector<int32_t> tokens;
  std::vector<int32_t> tokens2;  // the second document (retrieval); empty otherwise
  int64_t label = 0;
};

struct Dataset {
  std::string name;  // e.g. "listops/train"
  int64_t vocab_size = 0;
  int64_t num_classes = 0;
  std::vector<Example> examples;
};

}  // namespace relpos
