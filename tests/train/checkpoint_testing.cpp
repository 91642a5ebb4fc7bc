// Checkpoint test helpers (tests/train/checkpoint_testing.h).
#include "tests/train/checkpoint_testing.h"

#include <doctest/doctest.h>

#include "autograd/functions.h"
#include "tests/harness.h"
#include "train/training_state.h"

namespace relpos::test {

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).contiguous();
  const auto* begin = static_cast<const uint8_t*>(c.raw_data());
  return std::vector<uint8_t>(begin,
                              begin + c.numel() * static_cast<int64_t>(dtype_size(c.dtype())));
}

void check_same(const Tensor& got, const Tensor& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.defined());
  CHECK(got.dtype() == want.dtype());
  CHECK(got.shape() == want.shape());
  CHECK(bytes_of(got) == bytes_of(want));
}

void check_same(const std::vector<std::pair<std::string, Tensor>>& got,
                const std::vector<std::pair<std::string, Tensor>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].first == want[i].first);  // written order is kept
    check_same(got[i].second, want[i].second, want[i].first);
  }
}

std::shared_ptr<Adam> make_adam(const Module& net) {
  AdamConfig config;
  config.lr = 0.01;
  config.weight_decay = 0.01;
  return std::make_shared<Adam>(net.parameters(), config);
}

void train_step(TinyNet& net, Optimizer& opt, int k) {
  const Var x(test::random_tensor({6, 4}, DType::f32, 100 + k));
  const Var target(test::random_tensor({6, 3}, DType::f32, 200 + k));
  const Var diff = sub(net.forward(x), target);
  mean(mul(diff, diff)).backward();
  opt.step();
  opt.zero_grad();
}

CheckpointData small_checkpoint(uint64_t seed) {
  Generator gen(seed);
  TinyNet net(gen);
  auto opt = make_adam(net);
  train_step(net, *opt, 0);
  CheckpointData data = capture_state(net, opt.get());
  data.ints["step"] = 1;
  data.texts["config"] = "model:\n  dim: 4\n";
  return data;
}

}  // namespace relpos::test
