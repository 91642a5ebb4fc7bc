// What the model tests share (test_models.cpp, test_models_numerics.cpp): a tiny LRA-style
// config, building, parameters by name, padded batches with a key mask, and logits.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/models/model.h"

namespace relpos::test {

// A tiny LRA-style classifier: cls vector, learned positions, pre-LN, no dropout.
ModelConfig tiny_model_config(DType dtype = DType::f32);
std::shared_ptr<Classifier> build_model(const ModelConfig& c, uint64_t seed = 7);
std::map<std::string, Var> params_of(const Module& m);
// Rows of content ids (1 ... vocab - 1), each framed by [CLS] / [SEP] ids when given (>= 0), then
// padded with id 0 to `len`; -> tokens [B, len] i64 and key_mask [B, len] u8.
std::pair<Tensor, Tensor> batch_of(const std::vector<std::vector<int64_t>>& rows, int64_t len,
                                   SpecialTokens special = {});
Tensor logits_of(Classifier& model, const std::pair<Tensor, Tensor>& batch);

// y = x Wᵀ + b over the last dim, x [N, in] (b undefined: none).
Tensor dense(const Tensor& x, const Var& w, const Var& b);
// LayerNorm by its formula over the last dim: (x - mean) / sqrt(var + 1e-5) * w + b, biased
// variance.
Tensor naive_layer_norm(const Tensor& x, const Var& w, const Var& b);

// A few elements of every parameter of `model`: the gradient of sum(forward() * r), r random,
// against central differences (f64, eps 1e-6: exact to ~1e-9, inside atol/rtol 1e-6/1e-5).
void check_parameter_gradients(Module& model, const std::function<Var()>& forward);

// Two rows of different lengths.
inline const std::vector<std::vector<int64_t>> kRows = {{3, 1, 4, 1, 5}, {9, 2, 6}};

}  // namespace relpos::test
