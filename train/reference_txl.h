// Models of the reference Transformer-XL (kimiyoung/transformer-xl's MemTransformerLM, attn_type
// 0, div_val 1, no adaptive softmax) in and out of relpos: its state_dict as HDF5 (one dataset
// per key at the root, as h5py writes `{k: v.numpy()}`) and its hyper-parameters and symbols as
// JSON, against a relpos transformer_xl checkpoint. The names are mapped as
// docs/language-models.md tabulates them; qkv_net is the q, k and v projections stacked.
// `relpos import reference` and `relpos export reference` run these.
#pragma once

#include <string>

namespace relpos {

struct ReferenceImport {
  std::string state;     // the state_dict, .h5
  std::string hparams;   // n_layer, n_head, d_model, d_head, d_inner, dropout, dropatt, tgt_len,
                         // mem_len, same_length, clamp_len, pre_lnorm, tie_weight, n_token,
                         // symbols (the byte of each id, at most n_token), eval_batch_size
  std::string out;       // the relpos checkpoint written
  std::string data_dir;  // data.dir of its configuration (a `chars` folder)
};

// Writes the checkpoint; errors name the file and the key (a missing or extra tensor, a shape the
// hyper-parameters do not give, a tied output weight that is not the embedding).
void import_reference(const ReferenceImport& request);

// The other way: a relpos transformer_xl checkpoint (tied or untied output, one r_w_bias /
// r_r_bias for every layer, as the reference's default) as the reference's state_dict at `state`,
// its hyper-parameters and symbols at `hparams`, which import_reference reads back to the same
// checkpoint. The checkpoint is checked as `relpos eval` checks it (its parameters against the
// model its configuration builds); anything the reference cannot hold is refused by name.
void export_reference(const std::string& checkpoint, const std::string& state,
                      const std::string& hparams);

}  // namespace relpos
