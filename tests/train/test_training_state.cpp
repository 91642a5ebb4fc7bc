// Restoring modules and optimizers from checkpoints (train/training_state.h): a restored model
// and Adam continue bit-identically, and mismatched checkpoints are refused by message.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "autograd/functions.h"
#include "tests/harness.h"
#include "tests/train/checkpoint_testing.h"
#include "train/checkpoint.h"
#include "train/training_state.h"

using namespace relpos;
using namespace relpos::test;
namespace fs = std::filesystem;

TEST_CASE("checkpoint: a restored model and Adam continue bit-identically") {
  test::ScratchDir dir;
  const std::string path = dir.file("last.h5");
  Generator gen_a(1);
  TinyNet net_a(gen_a);
  auto opt_a = make_adam(net_a);
  for (int k = 0; k < 3; ++k) train_step(net_a, *opt_a, k);
  write_checkpoint(path, capture_state(net_a, opt_a.get()));

  Generator gen_b(2);  // another seed: other weights and other dropout masks
  TinyNet net_b(gen_b);
  auto opt_b = make_adam(net_b);
  CHECK(bytes_of(net_b.parameters()[0].value()) != bytes_of(net_a.parameters()[0].value()));
  const CheckpointData data = read_checkpoint(path);
  restore_module(net_b, data);
  restore_optimizer(*opt_b, net_b, data);
  CHECK(net_b.calls() == 3);
  // The optimizer shares the module's Vars, so it sees the restored values.
  CHECK(bytes_of(opt_b->params()[0].value()) == bytes_of(net_a.parameters()[0].value()));

  for (int k = 3; k < 5; ++k) {
    train_step(net_a, *opt_a, k);
    train_step(net_b, *opt_b, k);
  }
  const auto params_a = net_a.named_parameters(), params_b = net_b.named_parameters();
  REQUIRE(params_a.size() == 4);
  REQUIRE(params_b.size() == 4);
  for (size_t i = 0; i < params_a.size(); ++i)
    check_same(params_b[i].second.value(), params_a[i].second.value(), params_a[i].first);
  CHECK(opt_b->state()[0].at("step").item() == 5);
  check_same(opt_b->state()[0].at("exp_avg_sq"), opt_a->state()[0].at("exp_avg_sq"), "exp_avg_sq");
  CHECK(net_b.generator_slots()[0].second->offset() == net_a.generator_slots()[0].second->offset());
  CHECK(net_b.calls() == 5);
}

TEST_CASE("checkpoint: restoring refuses shape and dtype mismatches, missing and unknown entries") {
  const CheckpointData good = small_checkpoint();
  Generator gen(3);
  TinyNet net(gen);
  const std::vector<uint8_t> before = bytes_of(net.parameters()[0].value());
  const auto restore_error = [&](const CheckpointData& data) {
    return test::error_of([&] { restore_module(net, data); });
  };

  CheckpointData shape = good;
  shape.params[0].second = test::random_tensor({3, 4}, DType::f32, 9);
  CHECK(restore_error(shape) ==
        "[checkpoint] parameter 'fc1.weight' has shape [3, 4] in the checkpoint, the model "
        "expects [8, 4]");

  CheckpointData dtype = good;
  dtype.params[1].second = dtype.params[1].second.to(DType::f64);
  CHECK(restore_error(dtype) ==
        "[checkpoint] parameter 'fc1.bias' is f64 in the checkpoint, the model expects f32");

  // Diverged weights are refused by name (`relpos eval` once printed `loss nan` and exited 0).
  CheckpointData diverged = good;
  Tensor bad = diverged.params[1].second.clone();
  bad.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  diverged.params[1].second = bad;
  CHECK(restore_error(diverged) ==
        "[checkpoint] parameter 'fc1.bias' holds NaN or Inf values: the weights diverged before "
        "this checkpoint was written");

  CheckpointData unknown = good;
  unknown.params.emplace_back("fc3.weight", test::random_tensor({2, 2}, DType::f32, 9));
  CHECK(restore_error(unknown) ==
        "[checkpoint] the checkpoint has parameter 'fc3.weight', which the model does not have");

  CheckpointData missing = good;
  missing.params.pop_back();
  CHECK(restore_error(missing) ==
        "[checkpoint] parameter 'fc2.bias' is missing from the checkpoint");

  CheckpointData no_rng = good;
  no_rng.generators.clear();
  CHECK(restore_error(no_rng) ==
        "[checkpoint] generator 'drop.generator' is missing from the checkpoint: the model has a "
        "part that draws which the checkpoint's run did not have; resume with the configuration "
        "it was trained with");

  // A refused checkpoint changes nothing, even when the error comes after the parameters.
  CHECK(bytes_of(net.parameters()[0].value()) == before);
  // Not for training on (eval, generate): a generator the checkpoint lacks (a part of the model
  // newer than the file) keeps its state, the rest is restored.
  const Generator rng_before = *net.generator_slots()[0].second;
  restore_module(net, no_rng, false);
  CHECK(bytes_of(net.parameters()[0].value()) == bytes_of(good.params[0].second));
  CHECK(net.generator_slots()[0].second->offset() == rng_before.offset());
  CHECK(net.generator_slots()[0].second->seed() == rng_before.seed());
  // ... and takes another floating dtype, converted to the model's (eval --set model.dtype=f64),
  // where training refuses it (above). Integer and floating do not mix.
  restore_module(net, dtype, false);
  CHECK(net.named_parameters()[1].second.dtype() == DType::f32);
  CHECK(bytes_of(net.named_parameters()[1].second.value()) == bytes_of(good.params[1].second));
  CheckpointData integer = good;
  integer.params[1].second = integer.params[1].second.to(DType::i64);
  CHECK(test::error_of([&] { restore_module(net, integer, false); }) ==
        "[checkpoint] parameter 'fc1.bias' is i64 in the checkpoint, the model expects f32");

  CheckpointData no_optimizer = good;
  no_optimizer.optimizer.clear();
  auto opt = make_adam(net);
  CHECK(test::error_of([&] { restore_optimizer(*opt, net, no_optimizer); }) ==
        "[checkpoint] the checkpoint has no optimizer state");
  Adam partial({net.parameters()[1]}, AdamConfig{});
  CHECK(test::error_of([&] { capture_state(net, &partial); }) ==
        "[checkpoint] the optimizer holds 1 parameters, the module has 4; build the optimizer "
        "from module.parameters()");
}
