// What the checkpoint tests share (test_checkpoint.cpp, test_training_state.cpp): bit-exact
// tensor comparison, a tiny module with every kind of slot, Adam on it, and a small checkpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "train/adam.h"
#include "train/checkpoint.h"

namespace relpos::test {

// The bytes of a tensor, row-major, for bit-exact comparison.
std::vector<uint8_t> bytes_of(const Tensor& t);
// Same dtype, shape and bytes; the lists also in the same order and names.
void check_same(const Tensor& got, const Tensor& want, const std::string& what);
void check_same(const std::vector<std::pair<std::string, Tensor>>& got,
                const std::vector<std::pair<std::string, Tensor>>& want);

// Two Linear layers around a Dropout, with a buffer and a counter of its own: every kind of slot.
class TinyNet : public Module {
 public:
  explicit TinyNet(Generator& gen)
      : fc1_(register_module("fc1", std::make_shared<Linear>(4, 8, true, DType::f32, gen))),
        drop_(register_module("drop", std::make_shared<Dropout>(0.5, gen))),
        fc2_(register_module("fc2", std::make_shared<Linear>(8, 3, true, DType::f32, gen))) {
    scale_ = Tensor::from_vector<float>({1.0f, 0.5f, 2.0f}, {3});
    register_buffer("scale", scale_);
    register_counter("calls", calls_);
  }

  // x: [B, 4] -> [B, 3]
  Var forward(const Var& x) {
    ++calls_;
    return mul(fc2_->forward(drop_->forward(relu(fc1_->forward(x)))), Var(scale_));
  }
  int64_t calls() const { return calls_; }

 private:
  std::shared_ptr<Linear> fc1_;
  std::shared_ptr<Dropout> drop_;
  std::shared_ptr<Linear> fc2_;
  Tensor scale_;
  int64_t calls_ = 0;
};

std::shared_ptr<Adam> make_adam(const Module& net);
// One training step on batch k (inputs and targets from fixed seeds).
void train_step(TinyNet& net, Optimizer& opt, int k);
// A checkpoint of a TinyNet after one Adam step, with attributes.
CheckpointData small_checkpoint(uint64_t seed = 7);

}  // namespace relpos::test
