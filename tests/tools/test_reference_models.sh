#!/usr/bin/env bash
# relpos's predictions against the independent float64 re-implementations of its models
# (tools/reference_classifier.py, tools/reference_lm.py, written from the documentation): small
# models of several kinds are trained a few steps, their positional weights jittered (a few
# steps leave FastRPB's near 0, where a wrong convention would pass; SPE's noise is drawn from
# relpos's documented Philox stream), evaluated with
# `relpos eval --predictions` at two batch sizes, and recomputed example by example (classifiers,
# dual encoders) or along the stream (language models). Without numpy, h5py or PyYAML: SKIPPED
# (exit 77).
# Usage: test_reference_models.sh RELPOS [PYTHON]   (default /usr/bin/python3)
set -uo pipefail
relpos=$1
python=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
tools=$here/../../tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../cli/checks.sh
source "$here/../cli/checks.sh"

if ! "$python" -c "import h5py, numpy, yaml" 2>/dev/null; then
  echo "SKIPPED: the reference models need numpy, h5py and PyYAML in $python"
  exit 77
fi

# Adds N(0, 0.3) to every positional weight of a checkpoint (seeded), so FastRPB, Shaw and skew
# terms are large enough for a wrong sign or transpose to show.
jitter() {
  "$python" - "$1" <<'PY' || fail "cannot jitter $1"
import sys, h5py, numpy as np
rng = np.random.default_rng(0)
with h5py.File(sys.argv[1], "r+") as f:
    for name in f["params"]:
        if ".positional." in name:
            d = f["params/" + name]
            d[...] = d[()] + rng.normal(0, 0.3, d.shape).astype(d.dtype)
PY
}

# trained run, checker, its arguments: predictions at eval batch 64 (the default here) and 5.
check() {
  local what=$1 run=$2 checker=$3
  shift 3
  cp "$run/checkpoints/last.h5" "$tmp/ckpt.h5"
  jitter "$tmp/ckpt.h5"
  for batch in 64 5; do
    if ! "$relpos" eval "$tmp/ckpt.h5" --predictions "$tmp/pred.h5" \
      --set data.eval_batch_size=$batch "${@/#/--set=}" >"$tmp/out" 2>&1; then
      fail "$what: eval: $(cat "$tmp/out")"
      continue
    fi
    local set_args=()
    for kv in "$@"; do set_args+=(--set "$kv"); done
    [[ $checker == reference_lm.py ]] && set_args+=(--set "data.eval_batch_size=$batch")
    if "$python" "$tools/$checker" "$tmp/ckpt.h5" "$tmp/pred.h5" --data-dir "$data" \
      "${set_args[@]}" >"$tmp/out" 2>&1; then
      echo "ok $what (eval batch $batch): $(tail -2 "$tmp/out" | tr '\n' ' ')"
    else
      fail "$what (eval batch $batch): $(tail -3 "$tmp/out")"
    fi
  done
}

# KIND CHECKER CASE...: trains $tmp/KIND.yaml once per case "name:key=value;key=value" (the
# values are YAML, so they may hold commas) and checks each run.
train_and_check() {
  local kind=$1 checker=$2
  shift 2
  for case in "$@"; do
    local name=${case%%:*} sets set_args=()
    IFS=";" read -r -a sets <<<"${case#*:}"
    for kv in "${sets[@]}"; do set_args+=(--set "$kv"); done
    if "$relpos" train "$tmp/$kind.yaml" --out "$tmp/$name" --quiet "${set_args[@]}" \
      >"$tmp/out" 2>&1; then
      check "$kind $name" "$tmp/$name" "$checker"
    else
      fail "$kind $name: train: $(cat "$tmp/out")"
    fi
  done
}

# Classifiers on ListOps: variable lengths, padding, the lra tokenizer.
data=$tmp/listops
"$relpos" data prepare listops --out "$data" --train 160 --val 16 --test 24 --min_length 20 --max_length 90 \
  >/dev/null || fail "data prepare listops"
# A small model of TYPE on DATASET in folder $data, 12 updates, written to $tmp/KIND.yaml.
write_small_config() {
  local kind=$1 type=$2 dataset=$3 max_len=$4
  cat >"$tmp/$kind.yaml" <<YAML
model: {type: $type, num_layers: 2, num_heads: 2, model_dim: 16, mlp_dim: 32,
        dropout: 0.0, attention_dropout: 0.0}
data: {dataset: $dataset, dir: $data, max_len: $max_len, batch_size: 8}
optimizer: {type: adamw, lr: 0.003}
train: {steps: 12, eval_every: 0, log_every: 12, out: $tmp/$kind}
YAML
}
write_small_config classifier sequence_classifier listops 96
classifier_cases=(
  "softmax_shaw_post_cls_token:model.attention={type: softmax};model.positional={type: shaw};model.norm=post;model.cls=token;model.positions=learned"
  "softmax_naive_skew:model.attention={type: softmax, fused: false};model.positional={type: skew};model.pooling=mean"
  "sikf_fastrpb_pre_mean:model.attention={type: linear, feature_map: sikf};model.positional={type: fastrpb};model.norm=pre;model.pooling=mean"
  "dpfp_fastrpb_symmetric:model.attention={type: linear, feature_map: dpfp};model.positional={type: fastrpb, parameterization: symmetric};model.positions=sinusoidal"
  "elu1_shaw_linear_cost:model.attention={type: linear, feature_map: elu1};model.positional={type: shaw}"
  "performer_none:model.attention={type: linear, feature_map: performer}"
  "relu_fastrpb_mean:model.attention={type: linear, feature_map: relu};model.positional={type: fastrpb};model.pooling=mean"
  "cosformer_cls_token:model.attention={type: linear, feature_map: cosformer};model.cls=token"
  "sinspe_softmax_cls_token_shared:model.attention={type: softmax};model.positional={type: sinspe, num_realizations: 8, num_sines: 3};model.cls=token;model.share_positional=true"
  "convspe_elu1_ungated_one_filter:model.attention={type: linear, feature_map: elu1};model.positional={type: convspe, kernel_size: 5, gated: false, shared: true, eval_seed: 3};model.pooling=mean"
  "performer_sinspe:model.attention={type: linear, feature_map: performer, num_features: 16};model.positional={type: sinspe, num_realizations: 8}"
  "elu1_shaw_f64:model.dtype=f64;model.attention={type: linear, feature_map: elu1};model.positional={type: shaw}"
  "stacked_heads_elu1_fastrpb:model.head_combiner=stacked;model.stacked_hidden=8;model.attention={type: linear, feature_map: elu1};model.positional={type: fastrpb}"
  "index_first_cls_token:model.index_first=true;model.norm=post;model.embedding_norm=false;model.attention=softmax;model.cls=token;model.positions=sinusoidal"
  "tied_shared_shaw_relu:model.tied_blocks=true;model.share_positional=true;model.positional={type: shaw};model.activation=relu"
)
train_and_check classifier reference_classifier.py "${classifier_cases[@]}"
# An f32 checkpoint evaluated in f64 (eval --set model.dtype=f64) is the reference's float64
# computation of the same weights, to 1e-9 (Shaw in linear attention: the cancellation-prone case).
cp "$tmp/elu1_shaw_linear_cost/checkpoints/last.h5" "$tmp/ckpt.h5"
jitter "$tmp/ckpt.h5"
if "$relpos" eval "$tmp/ckpt.h5" --predictions "$tmp/pred.h5" --set model.dtype=f64 \
  >"$tmp/out" 2>&1 && "$python" "$tools/reference_classifier.py" "$tmp/ckpt.h5" "$tmp/pred.h5" \
  --data-dir "$data" --rtol 1e-9 >"$tmp/out" 2>&1; then
  echo "ok classifier elu1_shaw_linear_cost in f64: $(tail -2 "$tmp/out" | tr '\n' ' ')"
else
  fail "classifier elu1_shaw_linear_cost in f64: $(tail -3 "$tmp/out")"
fi

# Classifiers on MNIST-format images (random pixels, 60% black): pixel tokens pooled 4x4 with
# FastRPB 2D (the README demo's model), the paper's pixel ids with [CLS]/[SEP] pooled 2x2 on a
# 14 x 14 grid, and 3 x 3 patches with 2-D learned positions.
data=$tmp/mnist
"$python" - "$data" <<'PY' || fail "cannot write the MNIST images"
import os, struct, sys, numpy as np
rng = np.random.default_rng(3)
os.makedirs(sys.argv[1])
def write(name, values):
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(struct.pack(">HBB", 0, 8, values.ndim))
        f.write(struct.pack(">" + "I" * values.ndim, *values.shape))
        f.write(values.astype(np.uint8).tobytes())
for split, n in (("train", 64), ("t10k", 24)):
    images = rng.integers(0, 256, (n, 28, 28))
    images[rng.random(images.shape) < 0.6] = 0
    write(f"{split}-images-idx3-ubyte", images)
    write(f"{split}-labels-idx1-ubyte", rng.integers(0, 10, n))
PY
cat >"$tmp/image.yaml" <<YAML
model: {type: sequence_classifier, num_layers: 2, num_heads: 2, model_dim: 16, mlp_dim: 32,
        dropout: 0.0, attention_dropout: 0.0, norm: pre, input: pixels, cls: vector,
        pooling: mean, head: mlp}
data: {dataset: mnist, dir: $data, image_pool: 4, batch_size: 8}
optimizer: {type: adamw, lr: 0.003}
train: {steps: 6, eval_every: 0, log_every: 6, out: $tmp/image}
YAML
image_cases=(
  "pixels_sikf_fastrpb2d:model.attention={type: linear, feature_map: sikf};model.positional={type: fastrpb2d, grid: [7, 7]}"
  "tokens_cls_dpfp_fastrpb2d_symmetric:model.input=tokens;model.cls=token;model.pooling=cls;model.head=tanh;model.norm=post;data.image_pool=2;model.attention={type: linear, feature_map: dpfp};model.positional={type: fastrpb2d, grid: [14, 14], parameterization: symmetric}"
  "pixels_convspe2d_softmax:model.cls=none;model.attention={type: softmax};model.positional={type: convspe, grid: [7, 7], kernel_size: 3, num_realizations: 8}"
  "patches_learned2d_softmax_fastrpb2d:data.image_pool=1;model.input=patches;model.positions=learned2d;model.position_grid=[14, 14];model.attention={type: softmax};model.positional={type: fastrpb2d, grid: [14, 14]}"
)
train_and_check image reference_classifier.py "${image_cases[@]}"

# Dual encoders on AAN-format pairs (LRA Retrieval): random documents of 1-29 bytes (some past
# max_len, some not ASCII), both documents' lengths differing within a pair and a batch.
data=$tmp/aan
mkdir -p "$data"
"$python" - "$data" <<'PY' || fail "cannot write the AAN pairs"
import sys, numpy as np
rng = np.random.default_rng(1)
letters = list("abcdefgh ") + ["é", "ß"]
for split, n in (("train", 64), ("eval", 8), ("test", 24)):
    with open(f"{sys.argv[1]}/new_aan_pairs.{split}.tsv", "w", encoding="utf-8") as f:
        for i in range(n):
            a, b = ("".join(rng.choice(letters, rng.integers(1, 30))) for _ in range(2))
            f.write(f"{rng.integers(0, 2)}.0\tp{i}\tq{i}\t{a}\t{b}\n")
PY
write_small_config dual dual_encoder aan 24
dual_cases=(
  "features_elu1_fastrpb_post_cls_token:model.combine=features;model.attention={type: linear, feature_map: elu1};model.positional={type: fastrpb};model.norm=post;model.cls=token;model.pooling=mean"
  "cross_attention_softmax_skew:model.interaction=cross_attention;model.attention={type: softmax};model.positional={type: skew}"
  "cross_attention_sinspe:model.interaction=cross_attention;model.attention={type: softmax};model.positional={type: sinspe, num_realizations: 8}"
  "cross_attention_f64:model.dtype=f64;model.interaction=cross_attention;model.attention={type: linear, feature_map: elu1}"
)
train_and_check dual reference_classifier.py "${dual_cases[@]}"

# Language models on English text (the GPL-3 every Debian system ships), 2,000 test characters.
data=$tmp/chars
mkdir -p "$data"
english=/usr/share/common-licenses/GPL-3
cp "$english" "$data/train.txt"
tail -c +20001 "$english" | head -c 1000 >"$data/valid.txt"
tail -c +23001 "$english" | head -c 2000 >"$data/test.txt"
cat >"$tmp/lm.yaml" <<YAML
model: {type: transformer_xl, num_layers: 2, num_heads: 2, model_dim: 16, mlp_dim: 32,
        dropout: 0.0, attention_dropout: 0.0, mem_len: 8}
data: {dataset: chars, dir: $data, batch_size: 4, tgt_len: 8, eval_batch_size: 3}
optimizer: {type: adam, lr: 0.003}
train: {steps: 40, eval_every: 0, log_every: 40, out: $tmp/lm}
YAML
lm_cases=(
  "txl:"
  "txl_same_length_clamp:model.same_length=true;model.clamp_len=5"
  "causal_sikf_fastrpb_chunked:model.type=causal_lm;model.attention={type: linear, feature_map: sikf, algorithm: linear, chunk: 3};model.positional={type: fastrpb}"
  "causal_softmax_shaw:model.type=causal_lm;model.attention={type: softmax};model.positional={type: shaw}"
  "causal_elu1_recurrent:model.type=causal_lm;model.mem_len=0;model.recurrent_state=true;model.attention={type: linear, feature_map: elu1}"
  "txl_f64_untie_pre:model.dtype=f64;model.untie_r=true;model.norm=pre"
  "causal_performer_sinusoidal_f64:model.type=causal_lm;model.mem_len=0;model.positions=sinusoidal;model.dtype=f64;model.attention={type: linear, feature_map: performer, num_features: 8}"
  "causal_cosformer_default_len:model.type=causal_lm;model.attention={type: linear, feature_map: cosformer}"
  "causal_softmax_sinspe_memory:model.type=causal_lm;model.attention={type: softmax};model.positional={type: sinspe, num_realizations: 8, num_sines: 4}"
  "causal_elu1_convspe_memory:model.type=causal_lm;model.attention={type: linear, feature_map: elu1};model.positional={type: convspe, kernel_size: 6, num_realizations: 8}"
  "causal_softmax_skew_memory:model.type=causal_lm;model.attention={type: softmax};model.positional={type: skew}"
  # transformer_lm has no memory: null removes the base's mem_len.
  "transformer_lm_learned:model.type=transformer_lm;model.mem_len=null;model.positions=learned;model.max_len=64;model.attention=softmax"
  "transformer_lm_index_first:model.type=transformer_lm;model.mem_len=null;model.positions=sinusoidal;model.index_first=true;model.attention=softmax"
  "txl_stacked_heads:model.head_combiner=stacked;model.stacked_hidden=4"
  "transformer_lm_sinusoidal_pre_tied:model.type=transformer_lm;model.mem_len=null;model.positions=sinusoidal;model.norm=pre;model.tie_weights=true;model.attention={type: softmax, fused: false}"
)
train_and_check lm reference_lm.py "${lm_cases[@]}"
# A wider evaluation context of Transformer-XL (its relative attention takes any).
check "lm txl with eval.mem_len 24, eval.tgt_len 5" "$tmp/txl" reference_lm.py \
  eval.mem_len=24 eval.tgt_len=5

if [[ $failures -gt 0 ]]; then
  echo "$failures reference check(s) failed" >&2
  exit 1
fi
echo "reference models: all checks passed"
