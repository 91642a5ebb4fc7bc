// The checked readers of a checkpoint's entries (train/checkpoint_contents.h): position counters,
// the vocabulary and the configuration text, each refusal naming the file.
#include "tests/harness.h"
#include "train/checkpoint_contents.h"

using namespace relpos;

TEST_CASE("position_counter: absent, a count, or refused naming the file and the attribute") {
  CheckpointData data;
  CHECK_FALSE(position_counter(data, "ck.h5", "step").has_value());
  data.ints["step"] = 12;
  CHECK(position_counter(data, "ck.h5", "step") == 12);
  data.ints["step"] = -7;
  CHECK_THROWS_WITH_AS(
      position_counter(data, "ck.h5", "step"),
      "[checkpoint] 'ck.h5': attribute 'step' is -7; a training position is never negative", Error);
  data.ints.erase("step");
  data.texts["step"] = "abc";
  CHECK_THROWS_WITH_AS(position_counter(data, "ck.h5", "step"),
                       "[checkpoint] 'ck.h5': attribute 'step' is text, not an integer", Error);
  data.texts.erase("step");
  data.floats["epoch"] = 1.5;
  CHECK_THROWS_WITH_AS(position_counter(data, "ck.h5", "epoch"),
                       "[checkpoint] 'ck.h5': attribute 'epoch' is a float, not an integer", Error);
}

TEST_CASE("saved_vocabulary: a u8 vector of distinct bytes, or refused") {
  CheckpointData data;
  CHECK_FALSE(saved_vocabulary(data, "ck.h5").has_value());
  data.state.emplace_back("vocabulary", Tensor::from_vector<uint8_t>({97, 10, 255}, {3}));
  CHECK(saved_vocabulary(data, "ck.h5") == std::vector<uint8_t>{97, 10, 255});
  data.state.back().second = Tensor::from_vector<uint8_t>({97, 10, 97}, {3});
  CHECK_THROWS_WITH_AS(saved_vocabulary(data, "ck.h5"),
                       "[checkpoint] 'ck.h5': its vocabulary lists byte 97 twice", Error);
  for (const Tensor& bad : {Tensor::from_vector<float>({1, 2}, {2}),
                            Tensor::from_vector<uint8_t>({1, 2}, {1, 2}), zeros({0}, DType::u8)}) {
    data.state.back().second = bad;
    CHECK_THROWS_WITH_AS(saved_vocabulary(data, "ck.h5"),
                         doctest::Contains("[checkpoint] 'ck.h5': its vocabulary must be a "
                                           "non-empty u8 vector (a byte per token id), not "),
                         Error);
  }
}

TEST_CASE("saved_config_text: the text, or the command's error, or the attribute's kind named") {
  CheckpointData data;
  CHECK_THROWS_WITH_AS(saved_config_text(data, "ck.h5", "eval"),
                       "[eval] 'ck.h5' holds no configuration", Error);
  data.ints["config"] = 5;
  CHECK_THROWS_WITH_AS(
      saved_config_text(data, "ck.h5", "eval"),
      "[checkpoint] 'ck.h5': attribute 'config' is an integer, not the configuration's YAML text",
      Error);
  data.ints.clear();
  data.texts["config"] = "seed: 1\n";
  CHECK(saved_config_text(data, "ck.h5", "eval") == "seed: 1\n");
}
