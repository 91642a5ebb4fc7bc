// `relpos import reference STATE.h5 --hparams H.json --out CKPT.h5 [--data-dir DIR]`: a model
// trained by the reference Transformer-XL as a relpos checkpoint (train/reference_txl.h), which
// `relpos eval` and `relpos generate` then read like any other.
#include <cstdio>
#include <memory>

#include "tools/relpos/commands.h"
#include "tools/relpos/output_checks.h"
#include "train/reference_txl.h"

namespace relpos::cli {

void add_import_command(Command app, int& status) {
  Command import = app.add_subcommand("import", "Makes a relpos checkpoint of another model.");
  import.require_subcommand();
  auto r = std::make_shared<ReferenceImport>();
  r->data_dir = "data/chars";
  Command sub = import.add_subcommand(
      "reference",
      "A MemTransformerLM of kimiyoung/transformer-xl as a transformer_xl checkpoint.");
  sub.footer(
      "STATE.h5 holds the reference's state_dict, one dataset per key at the root (h5py:\n"
      "  with h5py.File('state.h5', 'w') as f:\n"
      "      for k, v in model.state_dict().items(): f[k] = v.cpu().numpy()\n"
      "). H.json holds its hyper-parameters (n_layer, n_head, d_model, d_head, d_inner, dropout,\n"
      "dropatt, tgt_len, mem_len, same_length, clamp_len, pre_lnorm, tie_weight, n_token,\n"
      "eval_batch_size) and `symbols`, the byte of each token id (at most n_token). The\n"
      "checkpoint's configuration evaluates in the reference's layout (eval.layout: reference)\n"
      "on a `chars` folder (train.txt, valid.txt, test.txt) at --data-dir.");
  sub.add_option("STATE", r->state, "the reference's state_dict as HDF5").required();
  sub.add_option("--hparams", r->hparams, "its hyper-parameters and symbols")
      .type_name("H.json")
      .required();
  sub.add_option("--out", r->out, "the relpos checkpoint written").type_name("CKPT.h5").required();
  sub.add_option("--data-dir", r->data_dir, "data.dir of its configuration (default data/chars)")
      .type_name("DIR");
  sub.callback([r, &status] {
    check_not_an_input("import", r->out, {r->state, r->hparams});
    import_reference(*r);
    std::printf("wrote %s\n", r->out.c_str());
    status = 0;
  });
}

void add_export_command(Command app, int& status) {
  Command exporter =
      app.add_subcommand("export", "Writes a relpos checkpoint for another implementation.");
  exporter.require_subcommand();
  struct ExportArgs {
    std::string checkpoint, state, hparams;
  };
  auto a = std::make_shared<ExportArgs>();
  Command sub = exporter.add_subcommand(
      "reference",
      "A transformer_xl checkpoint as a MemTransformerLM of kimiyoung/transformer-xl.");
  sub.footer(
      "Writes the reference's state_dict, one dataset per key at the root of STATE.h5 (PyTorch:\n"
      "  with h5py.File('state.h5') as f:\n"
      "      model.load_state_dict({k: torch.from_numpy(f[k][()]) for k in f})\n"
      "), and its hyper-parameters and symbols to H.json, the files `relpos import reference`\n"
      "reads. The model must share r_w_bias / r_r_bias (untie_r false).");
  sub.add_option("CHECKPOINT", a->checkpoint, "a transformer_xl checkpoint").required();
  sub.add_option("--state", a->state, "the state_dict written").type_name("STATE.h5").required();
  sub.add_option("--hparams", a->hparams, "the hyper-parameters and symbols written")
      .type_name("H.json")
      .required();
  sub.callback([a, &status] {
    check_not_an_input("export", a->state, {a->checkpoint, a->hparams});
    check_not_an_input("export", a->hparams, {a->checkpoint});
    export_reference(a->checkpoint, a->state, a->hparams);
    std::printf("wrote %s and %s\n", a->state.c_str(), a->hparams.c_str());
    status = 0;
  });
}

}  // namespace relpos::cli
