// The module's and its optimizer's part of the training state (train/training_state.h) to and
// from a checkpoint's CheckpointData, keyed by the module's dotted names (train/checkpoint.h).
// `relpos eval` and `relpos generate` read the module's part alone.
#pragma once

#include "layers/module.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"

namespace relpos {

// The module's parameters (named_parameters), buffers (buffer_slots), generators
// (generator_slots) and counters (counter_slots); with an optimizer, its state per parameter
// under the parameter's dotted name (an empty map for one it has not updated yet). The
// optimizer's parameters must be the module's, in named_parameters() order; error otherwise.
// Tensors share storage with the module's: write them before changing the module in place.
CheckpointData capture_state(Module& module, const Optimizer* optimizer);

// Sets the module's parameters (Var::set_value, so an optimizer holding them sees the new values),
// buffers, generators and counters from `data`, each on the device of the module's current
// tensor. Everything is checked before anything changes: an entry missing from the checkpoint,
// one the model does not have, or a dtype or shape mismatch is an error naming the entry, e.g.
//   [checkpoint] parameter 'x' has shape [3, 4] in the checkpoint, the model expects [4, 4]
// Generators matter only to training on: `for_training` false (eval, generate) lets a generator
// the checkpoint lacks keep its state, so a checkpoint written before a part of the model that
// draws (transformer_xl's distance_dropout) existed still evaluates; a resume refuses it. It
// also converts floating tensors to the model's dtype (`relpos eval --set model.dtype=f64` runs
// an f32 checkpoint's exact weights in f64); training takes only its own dtype.
void restore_module(Module& module, const CheckpointData& data, bool for_training = true);

// Sets the optimizer's state from `data`: every module parameter needs an entry (empty for one
// not updated yet). Scalars (Adam's "step") stay on the CPU, other state tensors go to the
// parameter's device. The optimizer's parameters must be the module's, as for capture_state.
void restore_optimizer(Optimizer& optimizer, const Module& module, const CheckpointData& data);

}  // namespace relpos
