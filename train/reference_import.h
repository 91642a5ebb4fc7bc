// A model trained by the reference Transformer-XL (kimiyoung/transformer-xl's MemTransformerLM,
// attn_type 0, div_val 1, no adaptive softmax) as a relpos checkpoint: its state_dict as HDF5
// (one dataset per key at the root, as h5py writes `{k: v.numpy()}`) and its hyper-parameters and
// symbols as JSON. The names are mapped as docs/language-models.md tabulates them; qkv_net is
// split into the q, k and v projections. `relpos import reference` runs it.
#pragma once

#include <string>

namespace relpos {

struct ReferenceImport {
  std::string state;     // the state_dict, .h5
  std::string hparams;   // n_layer, n_head, d_model, d_head, d_inner, dropout, dropatt, tgt_len,
                         // mem_len, same_length, clamp_len, pre_lnorm, tie_weight, n_token,
                         // symbols (the byte of each id), eval_batch_size
  std::string out;       // the relpos checkpoint written
  std::string data_dir;  // data.dir of its configuration (a `chars` folder)
};

// Writes the checkpoint; errors name the file and the key (a missing or extra tensor, a shape the
// hyper-parameters do not give, a tied output weight that is not the embedding).
void import_reference(const ReferenceImport& request);

}  // namespace relpos
