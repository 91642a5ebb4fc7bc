#!/usr/bin/env bash
# Hostile input through the real command line: malformed data files of every reader, configs
# that YAML accepts but relpos must not, damaged and diverged checkpoints, and a disk that fills
# up during training. Every case must end with exit status 2 and one line on stderr that names
# the file (or key) and the cause; never a crash, a silent success or an "internal error".
# Usage: test_bad_input.sh RELPOS_BINARY
set -uo pipefail
relpos=$1
tmp=$(mktemp -d)
mounts=()
cgroup=""
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  [[ -n $cgroup ]] && rmdir "$cgroup" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
python=/usr/bin/python3
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# refused DESCRIPTION PATTERN -- COMMAND...: exit 2, one line on stderr matching PATTERN (grep -E).
refused() {
  local what=$1 pattern=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne 2 ]]; then
    fail "$what: exit $got, expected 2"
    sed 's/^/  | /' "$tmp/err" >&2
    return
  fi
  local lines
  lines=$(wc -l <"$tmp/err")
  [[ $lines -eq 1 ]] || fail "$what: $lines lines on stderr, expected 1: $(cat "$tmp/err")"
  grep -qE -- "$pattern" "$tmp/err" || fail "$what: stderr '$(cat "$tmp/err")' lacks /$pattern/"
  grep -q "internal error" "$tmp/err" && fail "$what: reported as an internal error"
}

# --- MNIST: IDX files of the wrong geometry, and gzip with trailing bytes -------------------
# write_idx FILE KIND [DIMS...]: KIND images (pixel ramp) or labels (0..9), gzip when FILE ends .gz
write_idx() {
  "$python" - "$@" <<'PY'
import gzip, struct, sys
path, kind, dims = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3:]]
n = 1
for d in dims:
    n *= d
body = bytes((i * 7) % 256 for i in range(n)) if kind == "images" else bytes(i % 10 for i in range(n))
data = struct.pack(">BBBB", 0, 0, 8, len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + body
open(path, "wb").write(gzip.compress(data) if path.endswith(".gz") else data)
PY
}
mnist_config() {  # mnist_config DIR -> a tiny pixel classifier on DIR, pooled 4x4
  cat <<YAML
model: {num_layers: 1, num_heads: 2, model_dim: 8, mlp_dim: 16, input: pixels,
        positions: learned, cls: vector, pooling: cls, attention: {type: softmax}}
data: {dataset: mnist, dir: $1, image_pool: 4, batch_size: 4}
optimizer: {type: adam, lr: 0.001}
train: {steps: 1, out: $tmp/run_mnist}
YAML
}
for dims in "14 14" "28 27" "56 56"; do
  set -- $dims
  d=$tmp/mnist_$1x$2
  mkdir -p "$d"
  write_idx "$d/train-images-idx3-ubyte" images 16 "$1" "$2"
  write_idx "$d/train-labels-idx1-ubyte" labels 16
  write_idx "$d/t10k-images-idx3-ubyte" images 8 "$1" "$2"
  write_idx "$d/t10k-labels-idx1-ubyte" labels 8
  mnist_config "$d" >"$tmp/mnist.yaml"
  refused "mnist images $1x$2" \
    "^relpos: \[mnist\] $d/train-images-idx3-ubyte: header: images are $1 x $2; expected 28 x 28$" \
    -- "$relpos" train "$tmp/mnist.yaml" --quiet
done

# Lengths an image cannot have: the image readers ignored data.max_len, and a model built for
# another number of pixels than the images have failed at step 1.
d=$tmp/mnist_28x28
mkdir -p "$d"
write_idx "$d/train-images-idx3-ubyte" images 16 28 28
write_idx "$d/train-labels-idx1-ubyte" labels 16
write_idx "$d/t10k-images-idx3-ubyte" images 8 28 28
write_idx "$d/t10k-labels-idx1-ubyte" labels 8
mnist_config "$d" >"$tmp/mnist.yaml"
refused "data.max_len on images" \
  "^relpos: \[config\] data.max_len 10 cannot apply to dataset 'mnist': each of its examples is an image of 49 tokens; remove data.max_len$" \
  -- "$relpos" train "$tmp/mnist.yaml" --quiet --set data.max_len=10
refused "a grid encoding of more pixels than the images have" \
  "^relpos: \[config\] positional 'fastrpb2d' reads whole images of 100 pixels \(model.max_len\), but example 0 of the test split has 49 tokens; " \
  -- "$relpos" train "$tmp/mnist.yaml" --quiet --set model.max_len=100 \
  --set 'model.positional={type: fastrpb2d, grid: [10, 10]}'

d=$tmp/mnist_gz
mkdir -p "$d"
write_idx "$d/train-images-idx3-ubyte.gz" images 16 28 28
printf 'junk' >>"$d/train-images-idx3-ubyte.gz"
write_idx "$d/train-labels-idx1-ubyte" labels 16
write_idx "$d/t10k-images-idx3-ubyte" images 8 28 28
write_idx "$d/t10k-labels-idx1-ubyte" labels 8
mnist_config "$d" >"$tmp/mnist.yaml"
refused "bytes after a gzip stream" \
  "^relpos: \[mnist\] $d/train-images-idx3-ubyte.gz: gzip byte [0-9]+: 4 bytes after the end of the compressed stream" \
  -- "$relpos" train "$tmp/mnist.yaml" --quiet

# --- enwik8 / text8 downloads: exactly the published file -----------------------------------
# A zip is recognized by its bytes, not its name (a browser's enwik8.zip.1 is a zip); it must
# hold the one member of that name; the text must be exactly 10^8 bytes.
d=$tmp/downloads
mkdir -p "$d"
head -c 1000 /usr/share/common-licenses/GPL-3 >"$d/enwik8"
refused "a truncated enwik8" \
  "^relpos: \[enwik8\] '$d/enwik8' holds 1000 bytes; enwik8 is exactly 100,000,000" \
  -- "$relpos" data prepare enwik8 --from "$d/enwik8" --out "$d/out"
"$python" - "$d" <<'PY'
import sys, zipfile
d = sys.argv[1]
with zipfile.ZipFile(d + "/two.zip", "w") as z:
    z.writestr("enwik8", b"a" * 10)
    z.writestr("readme.txt", b"b")
with zipfile.ZipFile(d + "/enwik8.zip.1", "w") as z:
    z.writestr("enwik8", b"c" * 2000)
PY
refused "a zip of two members" \
  "^relpos: \[enwik8\] '$d/two.zip' is a zip of 2 member\(s\) \(enwik8, readme.txt\)" \
  -- "$relpos" data prepare enwik8 --from "$d/two.zip" --out "$d/out"
refused "a zip named enwik8.zip.1" "^relpos: \[enwik8\] '$d/enwik8.zip.1' holds 2000 bytes" \
  -- "$relpos" data prepare enwik8 --from "$d/enwik8.zip.1" --out "$d/out"
# A damaged zip: unzip's complaint on the error's one line (it printed 9 lines and said unzip
# was missing); a failed prepare leaves no --out folder behind.
printf 'PK\003\004damaged' >"$d/damaged.zip"
refused "a damaged zip" \
  "^relpos: \[text8\] \`\(unzip -Z1 '$d/damaged.zip' > .*\)\` failed \(exit status 9\): .*cannot find zipfile directory" \
  -- "$relpos" data prepare text8 --from "$d/damaged.zip" --out "$d/out"
[[ ! -e $d/out ]] || fail "a failed prepare left its --out folder"
[[ ! -e $d/out ]] || fail "a refused download wrote $d/out"
truncate -s 100000000 "$d/text8"
"$relpos" data prepare text8 --from "$d/text8" --out "$d/text8_out" >/dev/null 2>&1 ||
  fail "a 10^8-byte text8 is refused"
[[ $(stat -c %s "$d/text8_out/train.txt") -eq 90000000 ]] || fail "text8's train split is not 90M bytes"
# enwik8 as the reference reads it: each split without its newline bytes (3 in train, 1 in valid,
# 3 in test here).
cp "$d/text8" "$d/enwik8"
for at in 5 89999999 90000000 95000000 99999998 99999999; do
  printf '\n' | dd of="$d/enwik8" bs=1 seek=$at conv=notrunc status=none
done
printf '\n' | dd of="$d/enwik8" bs=1 seek=1000 conv=notrunc status=none
"$relpos" data prepare enwik8 --from "$d/enwik8" --vocabulary reference --out "$d/ref" \
  >/dev/null 2>&1 || fail "enwik8 --vocabulary reference is refused"
sizes=$(stat -c %s "$d/ref/train.txt" "$d/ref/valid.txt" "$d/ref/test.txt" | tr '\n' ' ')
[[ $sizes == "89999997 4999999 4999997 " ]] || fail "enwik8 --vocabulary reference splits: $sizes"
[[ $(cat "$d"/ref/*.txt | tr -cd '\n' | wc -c) -eq 0 ]] ||
  fail "enwik8 --vocabulary reference kept a newline"
refused "enwik8 --vocabulary other" "^relpos: \[enwik8\] --vocabulary must be bytes" \
  -- "$relpos" data prepare enwik8 --from "$d/enwik8" --vocabulary other --out "$d/x"
rm -rf "$d"

# --- Character LM: a validation split too short for its rows -------------------------------
d=$tmp/chars_short
mkdir -p "$d"
head -c 4000 /usr/share/common-licenses/GPL-3 >"$d/train.txt"
head -c 2 "$d/train.txt" >"$d/valid.txt"
head -c 400 "$d/train.txt" >"$d/test.txt"
cat >"$tmp/chars.yaml" <<YAML
model: {type: transformer_xl, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, mem_len: 8}
data: {dataset: chars, dir: $d, batch_size: 16, tgt_len: 8}
optimizer: {type: adam, lr: 0.003}
train: {steps: 1, out: $tmp/run_chars}
YAML
refused "a 2-byte LM split" \
  "^relpos: \[lm\] $d/valid.txt: the val split has 2 characters, too few for 16 rows with a target each \(data.batch_size\); it needs at least 17$" \
  -- "$relpos" train "$tmp/chars.yaml" --quiet
mkdir -p "$tmp/chars_dir/train.txt"
cp "$d/valid.txt" "$d/test.txt" "$tmp/chars_dir/"
sed "s|dir: $d|dir: $tmp/chars_dir|" "$tmp/chars.yaml" >"$tmp/chars_dir.yaml"
refused "a split file that is a directory" \
  "^relpos: \[char_corpus\] $tmp/chars_dir/train.txt: open: is a directory, not a data file$" \
  -- "$relpos" train "$tmp/chars_dir.yaml" --quiet

# A split that links to a device: /dev/zero was read until the process was killed. /dev/null
# stands in for it (the same refusal; a finite read should it ever fail).
ln -s /dev/null "$tmp/chars_dir/valid.txt.link"
rm -rf "$tmp/chars_dir/train.txt"
cp "$d/train.txt" "$tmp/chars_dir/train.txt"
mv "$tmp/chars_dir/valid.txt.link" "$tmp/chars_dir/valid.txt"
refused "a split that links to a device" \
  "^relpos: \[char_corpus\] $tmp/chars_dir/valid.txt: open: is a character device, not a data file$" \
  -- "$relpos" train "$tmp/chars_dir.yaml" --quiet

# --- Character LM: sizes whose sum or rows overflow int64 -----------------------------------
head -c 400 "$d/train.txt" >"$d/valid.txt"
refused "lm tgt_len 2^63 - 1 (tgt_len + mem_len wrapped to a negative max_len)" \
  "^relpos: \[config\] data.tgt_len 9223372036854775807 plus model.mem_len 8 overflows int64$" \
  -- "$relpos" train "$tmp/chars.yaml" --set data.tgt_len=9223372036854775807 --quiet
refused "lm batch_size 2^63 - 1" \
  "^relpos: \[lm\] $d/train.txt: the train split has 4000 characters, too few for 9223372036854775807 rows with a target each \(data.batch_size\); it needs at least 9223372036854775807$" \
  -- "$relpos" train "$tmp/chars.yaml" --set data.batch_size=9223372036854775807 --quiet

# --- Character LM: data whose symbols are not the checkpoint's ------------------------------
# One character replaced everywhere ('W' -> '~'): the vocabulary keeps its size but an id means
# another byte. eval and --resume refuse it, naming the id; the same data still evaluates.
d=$tmp/chars_ok
mkdir -p "$d"
head -c 6000 /usr/share/common-licenses/GPL-3 >"$d/train.txt"
head -c 600 "$d/train.txt" >"$d/valid.txt"
cp "$d/valid.txt" "$d/test.txt"
sed "s|dir: $tmp/chars_short|dir: $d|; s|batch_size: 16|batch_size: 4|; s|run_chars|run_vocab|" \
  "$tmp/chars.yaml" >"$tmp/vocab.yaml"
"$relpos" train "$tmp/vocab.yaml" --quiet >/dev/null 2>&1 || fail "the vocabulary run did not train"
# Transformer-XL's distance_dropout defaults to model.dropout: a bad model.dropout is named as
# itself (it was reported as distance_dropout), and bf16 is refused for an f64 model.
refused "model.dropout 1 in transformer_xl" "^relpos: \[model\] dropout must be in \[0, 1\), got 1$" \
  -- "$relpos" train "$tmp/vocab.yaml" --set model.dropout=1 --quiet
refused "distance_dropout 1.5" "^relpos: \[model\] distance_dropout must be in \[0, 1\), got 1.5$" \
  -- "$relpos" train "$tmp/vocab.yaml" --set model.distance_dropout=1.5 --quiet
refused "bf16 with an f64 model" \
  "^relpos: \[config\] train.precision bf16 rounds an f32 model's products; model.dtype is f64$" \
  -- "$relpos" train "$tmp/vocab.yaml" --set train.precision=bf16 --set model.dtype=f64 --quiet
# A model whose position tables are shorter than a segment (with its memory), and a classifier's
# keys on a language model: the first failed at step 1, leaving the run folder; the others were
# accepted and ignored.
refused "transformer_lm max_len below tgt_len" \
  "^relpos: \[config\] transformer_lm's positions cover 6 keys \(model.max_len 6\) but data.tgt_len 8 plus model.mem_len 0 make 8: raise model.max_len \(0: sized from these\) or shorten data.tgt_len$" \
  -- "$relpos" train "$tmp/vocab.yaml" --set model='{type: transformer_lm, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, max_len: 6}' --out "$tmp/run_short" --quiet
refused "transformer_lm max_len below eval.tgt_len" \
  "^relpos: \[config\] transformer_lm's positions cover 8 keys \(model.max_len 8\) but eval.tgt_len 12 plus model.mem_len 0 make 12: raise" \
  -- "$relpos" train "$tmp/vocab.yaml" --set model='{type: transformer_lm, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, max_len: 8}' --set eval.tgt_len=12 --out "$tmp/run_short" --quiet
# cosFormer's re-weighting is defined up to cosformer_len (default model.max_len) positions.
refused "cosformer_len below tgt_len" \
  "^relpos: \[config\] causal_lm's positions cover 5 keys \(model.max_len 4\) but data.tgt_len 8 plus model.mem_len 0 make 8: raise" \
  -- "$relpos" train "$tmp/vocab.yaml" --set model='{type: causal_lm, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, max_len: 4, mem_len: 0, attention: {type: linear, feature_map: cosformer}}' --out "$tmp/run_short" --quiet
# Transformer-XL's relative attention reads any length: its model.max_len was accepted and did
# nothing, and `relpos generate` then said its positions covered that many keys.
refused "transformer_xl with model.max_len" \
  "^relpos: \[config\] model.max_len 10 does nothing for this transformer_xl: its attention and positions read any number of keys \(no table to size\); remove it$" \
  -- "$relpos" train "$tmp/vocab.yaml" --set model.max_len=10 --out "$tmp/run_short" --quiet
[[ ! -e $tmp/run_short ]] || fail "a refused max_len left $tmp/run_short"
for key in data.max_len=16 data.drop_last=true; do
  refused "a language model with $key" \
    "^relpos: \[config\] ${key%%=*} is a classifier's setting \(its examples' length and batches\); a language model reads segments of data.tgt_len from one stream: remove it$" \
    -- "$relpos" train "$tmp/vocab.yaml" --set "$key" --quiet
done
mkdir -p "$tmp/chars_swapped"
for f in train valid test; do tr 'W' '~' <"$d/$f.txt" >"$tmp/chars_swapped/$f.txt"; done
grep -q W "$d/train.txt" || fail "the vocabulary check's text has no 'W' to replace"
"$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" >/dev/null 2>&1 ||
  fail "eval on the training data itself is refused"
refused "eval on data with another vocabulary" \
  "^relpos: \[lm\] '$tmp/run_vocab/checkpoints/last.h5' was trained on other symbols than '$tmp/chars_swapped' holds \(67 there, 67 here; only in the checkpoint: 'W'; only in this data: '~'\): its ids would mean other characters$" \
  -- "$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --data-dir "$tmp/chars_swapped"
refused "resume on data with another vocabulary" \
  "^relpos: \[lm\] '$tmp/run_vocab/checkpoints/last.h5' was trained on other symbols" \
  -- "$relpos" train "$tmp/vocab.yaml" --set "data.dir=$tmp/chars_swapped" --set train.steps=2 \
  --resume "$tmp/run_vocab/checkpoints/last.h5" --allow-config-change --quiet
# A checkpoint runs with the sizes it was trained with: eval --set model.num_layers=10^12 built
# layers until memory ran out (minutes) for a model the checkpoint could not fill.
refused "eval with another num_layers" \
  "^relpos: \[eval\] model.num_layers 1000000000000 is not the 1 of the model '$tmp/run_vocab/checkpoints/last.h5' holds: a checkpoint runs with the sizes it was trained with$" \
  -- "$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --set model.num_layers=1000000000000
refused "generate with another model_dim" "^relpos: \[generate\] model.model_dim 8 is not the 16 " \
  -- "$relpos" generate "$tmp/run_vocab/checkpoints/last.h5" --prompt The --tokens 3 \
  --set model.model_dim=8
"$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --set model.attention.fused=false >/dev/null \
  2>&1 || fail "eval with the naive attention (not a size) is refused"
"$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --set model.dropout=0.5 \
  --set model.attention_dropout=0.3 >/dev/null 2>&1 || fail "eval with other dropout is refused"
# The f32 weights computed in f64: the same loss to f32's rounding.
f32_loss=$("$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --json | grep -oE '"loss": [0-9.e+-]+')
f64_loss=$("$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --json --set model.dtype=f64 |
  grep -oE '"loss": [0-9.e+-]+')
awk -v a="${f32_loss#*: }" -v b="${f64_loss#*: }" 'BEGIN { d = a - b; exit !(a > 0 && d * d < 1e-10 * a * a) }' ||
  fail "eval in f64 of an f32 checkpoint: loss '$f64_loss', in f32 '$f32_loss'"
# Nor another model of the same sizes: eval --set model.norm=pre evaluated the checkpoint's
# weights in a pre-LN model (another loss, no word said).
refused "eval with another norm" \
  "^relpos: \[eval\] model.norm pre is not the post of the model '$tmp/run_vocab/checkpoints/last.h5' holds: a checkpoint runs as it was trained \(train.init_from starts a new run from its parameters\)$" \
  -- "$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --set model.norm=pre
refused "eval with model.mem_len" \
  "^relpos: \[eval\] model.mem_len 4 is not the 8 of the model '$tmp/run_vocab/checkpoints/last.h5' holds: evaluation's is eval.mem_len$" \
  -- "$relpos" eval "$tmp/run_vocab/checkpoints/last.h5" --set model.mem_len=4
refused "generate with another activation" \
  "^relpos: \[generate\] model.activation gelu is not the relu of the model " \
  -- "$relpos" generate "$tmp/run_vocab/checkpoints/last.h5" --prompt The --tokens 3 \
  --set model.activation=gelu

# --- A checkpoint's contents doctored (h5py): each refusal names the file -------------------
# A negative step was reported by eval and resumed by train; a uint64 step was clamped; a text
# step read as 0; export of a checkpoint without its embedding was an internal error and
# exported an embedding cut to 10 rows as n_token 10; contents errors did not name the file.
if "$python" -c "import h5py" 2>/dev/null; then
  lm=$tmp/run_vocab/checkpoints/last.h5
  "$python" - "$lm" "$tmp/doctored" <<'PY' || fail "h5py could not doctor the LM checkpoint"
import h5py, numpy as np, os, shutil, sys
source, out = sys.argv[1:3]
os.makedirs(out)
def text(s):  # a fixed-length string attribute, as relpos writes them
    b = s.encode()
    return dict(data=b, dtype=h5py.string_dtype("utf-8", len(b) + 1))
def doctor(name, change):
    shutil.copy(source, f"{out}/{name}.h5")
    with h5py.File(f"{out}/{name}.h5", "r+") as f:
        change(f)
config = h5py.File(source, "r").attrs["config"].decode()
doctor("step_negative", lambda f: f.attrs.__setitem__("step", np.int64(-7)))
doctor("step_text", lambda f: f.attrs.create("step", **text("abc")))
doctor("step_u64", lambda f: f.attrs.__setitem__("step", np.uint64(2**64 - 1)))
doctor("record_past_step", lambda f: f.attrs.__setitem__("record_updates", np.int64(99)))
doctor("record_nan", lambda f: f.attrs.__setitem__("record_loss_sum", np.float64("nan")))
doctor("config_nul", lambda f: f.attrs.create("config", **text(config + "\0junk")))
doctor("config_int", lambda f: f.attrs.__setitem__("config", np.int64(5)))
doctor("config_key", lambda f: f.attrs.create("config", **text(config + "zzz: 1\n")))
def cut(rows):
    def change(f):
        w = f["params/embedding.weight"][()]
        del f["params/embedding.weight"]
        if rows: f["params/embedding.weight"] = w[:rows]
    return change
doctor("no_embedding", cut(0))
doctor("embedding_10", cut(10))
def vocabulary(v):
    def change(f):
        del f["state/vocabulary"]
        f["state/vocabulary"] = v(f)
    return change
doctor("vocab_twice", vocabulary(lambda f: np.full(f["params/embedding.weight"].shape[0], 65, np.uint8)))
doctor("vocab_f32", vocabulary(lambda f: np.zeros((2, 3), np.float32)))
PY
  o=$tmp/doctored
  refused "eval of a negative step" \
    "^relpos: \[checkpoint\] '$o/step_negative.h5': attribute 'step' is -7; a training position is never negative$" \
    -- "$relpos" eval "$o/step_negative.h5"
  refused "resume from a negative step" \
    "^relpos: \[checkpoint\] '$o/step_negative.h5': attribute 'step' is -7; a training position" \
    -- "$relpos" train "$tmp/vocab.yaml" --set train.steps=3 --resume "$o/step_negative.h5" --quiet
  # The open train record a checkpoint saves (its updates and loss sum) is one its step allows.
  refused "resume with a train record longer than the run" \
    "^relpos: \[checkpoint\] '$o/record_past_step.h5': a train record of 99 updates with loss sum [^ ]* cannot be open at step [0-9]*$" \
    -- "$relpos" train "$tmp/vocab.yaml" --set train.steps=3 --resume "$o/record_past_step.h5" --quiet
  refused "resume with a NaN train record" \
    "^relpos: \[checkpoint\] '$o/record_nan.h5': a train record of [0-9]* updates with loss sum nan cannot" \
    -- "$relpos" train "$tmp/vocab.yaml" --set train.steps=3 --resume "$o/record_nan.h5" --quiet
  refused "eval of a text step" "^relpos: \[checkpoint\] '$o/step_text.h5': attribute 'step' is text, not an integer$" \
    -- "$relpos" eval "$o/step_text.h5"
  refused "eval of a uint64 step past int64" \
    "^relpos: \[checkpoint\] '$o/step_u64.h5': attribute 'step' is 18446744073709551615, more than an i64 holds$" \
    -- "$relpos" eval "$o/step_u64.h5"
  refused "a configuration with a NUL byte" \
    "^relpos: \[checkpoint\] '$o/config_nul.h5': attribute 'config' holds a NUL byte inside its text$" \
    -- "$relpos" eval "$o/config_nul.h5"
  refused "a configuration that is a number" \
    "^relpos: \[checkpoint\] '$o/config_int.h5': attribute 'config' is an integer, not the configuration's YAML text$" \
    -- "$relpos" export reference "$o/config_int.h5" --state "$tmp/x_state.h5" --hparams "$tmp/x.json"
  refused "a stored configuration with an unknown key" \
    "^relpos: \[config\] '$o/config_key.h5': unknown key 'zzz'" -- "$relpos" eval "$o/config_key.h5"
  refused "an override's unknown key (not the checkpoint's)" "^relpos: \[config\] unknown key 'yyy'" \
    -- "$relpos" eval "$lm" --set yyy=1
  export_to=(--state "$tmp/x_state.h5" --hparams "$tmp/x.json")
  for command in eval "export reference"; do
    args=()
    [[ $command == eval ]] || args=("${export_to[@]}")
    refused "$command of a checkpoint without its embedding" \
      "^relpos: \[checkpoint\] '$o/no_embedding.h5': parameter 'embedding.weight' is missing from the checkpoint$" \
      -- "$relpos" $command "$o/no_embedding.h5" "${args[@]}"
  done
  refused "export of an embedding cut to 10 rows" \
    "^relpos: \[checkpoint\] '$o/embedding_10.h5': parameter 'embedding.weight' has shape \[10, 16\] in the checkpoint, the model expects \[67, 16\]$" \
    -- "$relpos" export reference "$o/embedding_10.h5" "${export_to[@]}"
  [[ ! -e $tmp/x_state.h5 && ! -e $tmp/x.json ]] || fail "a refused export wrote its files"
  for command in eval generate "export reference"; do
    args=()
    [[ $command == generate ]] && args=(--prompt T --tokens 3)
    [[ $command == export* ]] && args=("${export_to[@]}")
    refused "$command of a vocabulary with a byte twice" \
      "^relpos: \[checkpoint\] '$o/vocab_twice.h5': its vocabulary lists byte 65 twice$" \
      -- "$relpos" $command "$o/vocab_twice.h5" "${args[@]}"
  done
  refused "generate from an f32 vocabulary" \
    "^relpos: \[checkpoint\] '$o/vocab_f32.h5': its vocabulary must be a non-empty u8 vector \(a byte per token id\), not f32\[2, 3\]$" \
    -- "$relpos" generate "$o/vocab_f32.h5" --prompt T --tokens 3
else
  echo "SKIPPED: doctored checkpoint cases (no h5py in $python)"
fi

# --- CIFAR-10: an empty batch -------------------------------------------------------------
d=$tmp/cifar/cifar-10-batches-bin
mkdir -p "$d"
"$python" -c '
import sys
record = bytes([3]) + bytes(range(256)) * 12
for name in ["data_batch_1", "data_batch_2", "data_batch_4", "data_batch_5", "test_batch"]:
    open(f"{sys.argv[1]}/{name}.bin", "wb").write(record * 2)
open(f"{sys.argv[1]}/data_batch_3.bin", "wb").close()
' "$d"
cat >"$tmp/cifar.yaml" <<YAML
model: {num_layers: 1, num_heads: 2, model_dim: 8, mlp_dim: 16, cls: vector, pooling: cls,
        attention: {type: softmax}}
data: {dataset: cifar10, dir: $tmp/cifar, batch_size: 2}
optimizer: {type: adam, lr: 0.001}
train: {steps: 1, out: $tmp/run_cifar}
YAML
refused "empty CIFAR batch" "^relpos: \[cifar10\] $d/data_batch_3.bin: byte 0: no records" \
  -- "$relpos" train "$tmp/cifar.yaml" --quiet

# --- ListOps: tokens outside the closed vocabulary ----------------------------------------
"$relpos" data prepare listops --out "$tmp/listops" --train 64 --val 16 --test 16 \
  --min-length 10 --max_length 60 --seed 1 >/dev/null 2>&1 || fail "data prepare listops"
cp -r "$tmp/listops" "$tmp/listops_good"
# More trees than memory holds are refused after a sample of them, before memory fills up (the
# generator keeps every tree to de-duplicate); split sizes whose sum overflows are refused.
refused "listops --train 10^12" \
  "^relpos: \[listops generator\] 1000000000002 trees take about [0-9.]+ GB of memory \([0-9]+ bytes each, twice over while written\); [0-9.]+ GB are left: generate fewer$" \
  -- "$relpos" data prepare listops --out "$tmp/listops_huge" --train 1000000000000 --val 1 --test 1
[[ ! -e $tmp/listops_huge ]] || fail "listops --train 10^12 wrote $tmp/listops_huge"
refused "listops split sizes overflow" \
  "^relpos: \[data prepare\] listops --train must be in \[1, 2\^63 / 3\), got 9223372036854775807$" \
  -- "$relpos" data prepare listops --out "$tmp/listops_huge" --train 9223372036854775807
# A split of no trees is one the reader refuses: refused when asked for, before anything is written.
refused "listops --val 0" "^relpos: \[data prepare\] listops --val must be in \[1, 2\^63 / 3\), got 0$" \
  -- "$relpos" data prepare listops --out "$tmp/listops_huge" --val 0
[[ ! -e $tmp/listops_huge ]] || fail "listops --val 0 wrote $tmp/listops_huge"
cat >"$tmp/listops.yaml" <<YAML
model: {num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, positions: sinusoidal, pooling: mean,
        attention: {type: linear, feature_map: elu1}, positional: {type: fastrpb}}
data: {dataset: listops, dir: $tmp/listops, max_len: 64, batch_size: 8}
optimizer: {type: adam, lr: 0.01}
train: {steps: 2, eval_every: 2, out: $tmp/run}
YAML
for token in '[FOO' $'\x01' $'\xff'; do
  printf 'Source\tTarget\n[MAX 1 2 ]\t2\n( %s 3 ] )\t1\n' "$token" >"$tmp/listops/basic_train.tsv"
  refused "listops token $(printf '%q' "$token")" \
    "^relpos: \[listops\] $tmp/listops/basic_train.tsv: line 3, column 3: token '.*' is not in the ListOps vocabulary" \
    -- "$relpos" train "$tmp/listops.yaml" --quiet
done
# A gzip split is streamed (datasets/byte_stream.h): whole it trains; cut, or with bytes after its
# end, it is refused naming the compressed byte.
gzip -c "$tmp/listops_good/basic_train.tsv" >"$tmp/listops/basic_train.tsv"
"$relpos" train "$tmp/listops.yaml" --quiet --out "$tmp/run_gzip" >"$tmp/out" 2>&1 ||
  fail "a gzip ListOps split: $(tail -1 "$tmp/out")"
gzip -c "$tmp/listops_good/basic_train.tsv" >"$tmp/whole.gz"
head -c 200 "$tmp/whole.gz" >"$tmp/listops/basic_train.tsv"
refused "a cut gzip ListOps split" \
  "^relpos: \[listops\] $tmp/listops/basic_train.tsv: gzip byte 200: the compressed stream ends early \(truncated file\)$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet
cp "$tmp/listops_good/basic_train.tsv" "$tmp/listops/basic_train.tsv"
# A folder where a split file belongs was "basic_val.tsv not found in ...".
mv "$tmp/listops/basic_val.tsv" "$tmp/listops/basic_val.tsv.saved"
mkdir "$tmp/listops/basic_val.tsv"
refused "a folder where a split file belongs" \
  "^relpos: \[data\] $tmp/listops/basic_val.tsv: open: is a directory, not a data file$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet
rmdir "$tmp/listops/basic_val.tsv"
# A link that leads to no file was "basic_val.tsv not found in ..." with how to make the data.
ln -s basic_val.tsv "$tmp/listops/basic_val.tsv"
refused "a link loop where a split file belongs" \
  "^relpos: \[data\] $tmp/listops/basic_val.tsv: open: a link to 'basic_val.tsv', which leads to no file \(.*\); mend or remove the link$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet
rm "$tmp/listops/basic_val.tsv"
mv "$tmp/listops/basic_val.tsv.saved" "$tmp/listops/basic_val.tsv"
# A key written with no value that no base gives one was accepted and meant nothing: `{type:linear}`
# (no space after the colon) is YAML's key "type:linear" without a value, and trained the default
# softmax attention; `--set model.mystery=null` was accepted too.
refused "a mapping's key without a space after its colon" \
  "^relpos: \[model.attention\] unknown option 'type:linear'; known: dropout, fused, type \(YAML needs a space after a key's colon: 'type: linear', not 'type:linear'\)$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set 'model.attention={type:linear}'
sed 's/max_len: 64, batch_size: 8/max_len:64, batch_size: 8/' "$tmp/listops.yaml" >"$tmp/colon.yaml"
refused "a section's key without a space after its colon, in a file" \
  "^relpos: \[config\] unknown key 'data.max_len:64'; valid keys of 'data': .* \(YAML needs a space after a key's colon: 'max_len: 64', not 'max_len:64'\)$" \
  -- "$relpos" train "$tmp/colon.yaml" --quiet
# yaml-cpp names a tab that indents a line only as "illegal map value".
{ echo "base: $tmp/listops.yaml"; printf 'model:\n\tnum_layers: 1\n'; } >"$tmp/tab.yaml"
refused "a line indented with a tab" \
  "^relpos: \[config\] '$tmp/tab.yaml' line 3: illegal map value \(line 3 indents with a tab; YAML indents with spaces\)$" \
  -- "$relpos" train "$tmp/tab.yaml" --quiet
refused "null on a key nothing reads" "^relpos: \[config\] unknown key 'model.mystery'; valid keys of 'model': " \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set model.mystery=null
# Sizes that contradict the data are refused before step 1, by key (they failed inside it, in the
# loss, the embedding or "the training loader ran dry"); so is a number that is not finite (an
# inf eps passed every ">= 0" check and made the first loss NaN).
refused "num_classes below the data's" \
  "^relpos: \[config\] model.num_classes 2 is below the 10 classes of dataset 'listops' \(0: the dataset's\)$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set model.num_classes=2
refused "vocab_size below the data's" \
  "^relpos: \[config\] model.vocab_size 3 is below the 17 symbols of dataset 'listops' \(0: the dataset's\)$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set model.vocab_size=3
# A grid encoding on text: every batch with padding failed, at the first one.
refused "a grid encoding on examples of many lengths" \
  "^relpos: \[config\] positional 'fastrpb2d' reads whole images of 64 pixels \(model.max_len\), but example [0-9]+ of the [a-z]+ split has [0-9]+ tokens; it needs data whose every example is such an image \(model.max_len 0: the data's length\)$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set 'model.positional={type: fastrpb2d, grid: [8, 8]}'
refused "drop_last with a batch past the split" \
  "^relpos: \[config\] data.batch_size 100 is more than the 64 training examples and data.drop_last drops the short batch, so an epoch has none: lower data.batch_size or set data.drop_last: false$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set data.batch_size=100 --set data.drop_last=true
refused "an inf eps" \
  "^relpos: \[model.attention\] option 'eps' must be a finite number, got 'inf'$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set model.attention.eps=inf
# C's hexadecimal floats, which strtod reads, were taken as numbers (integers refused hex).
refused "a hexadecimal lr" \
  "^relpos: \[optimizer\] option 'lr' must be a finite number, got '0x1p-10'$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set optimizer.lr=0x1p-10
# A quoted "\0" put a NUL into the value, which cut the message quoting it ("unknown dataset 'ab").
refused "a NUL escaped into a value" \
  "line 1: a key or value holds the control byte 0x00; settings are printable text$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set 'data.dataset="ab\0cd"'
# A model.max_len below the tokens the data keeps failed at the first long example, leaving the
# run folder; a language model's keys on a classifier were accepted and ignored; an accumulate of
# more batches than an epoch has read the data over and over for one update (10^11: for ever).
refused "model.max_len below the data's" \
  "^relpos: \[config\] model.max_len 32 is below the 64 tokens the data keeps of an example \(data.max_len\): raise model.max_len \(0: the data's\) or lower data.max_len$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set model.max_len=32
refused "model.max_len below the dataset's default length" \
  "^relpos: \[config\] model.max_len 32 is below the 2000 tokens the data keeps of an example \(the default length of dataset 'listops'\)" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set model.max_len=32 --set data.max_len=0
for key in data.tgt_len=8 eval.mem_len=4 eval.same_length=false eval.layout=reference; do
  refused "a classifier with $key" \
    "^relpos: \[config\] ${key%%=*} is a language model's setting \(segments, memory\); data.dataset 'listops' is classified by example: remove it$" \
    -- "$relpos" train "$tmp/listops.yaml" --quiet --set "$key"
done
refused "schedule.total_steps below the run's updates" \
  "^relpos: \[schedule\] total_steps \(1\) is below the run's 2 updates: the schedule would end before the run; leave total_steps out to span the run$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set schedule='{type: linear_decay, total_steps: 1}'
refused "train.accumulate past an epoch" \
  "^relpos: \[config\] train.accumulate 100000000000 sums more batches into one update than an epoch has \(8 of data.batch_size 8\): lower it or data.batch_size$" \
  -- "$relpos" train "$tmp/listops.yaml" --quiet --set train.accumulate=100000000000
[[ ! -e $tmp/run ]] || fail "a refused run left $tmp/run"

# --- IMDB: a review that is a dangling link -----------------------------------------------
for split in train test; do
  for label in pos neg; do
    mkdir -p "$tmp/imdb/aclImdb/$split/$label"
    echo "a $label review" >"$tmp/imdb/aclImdb/$split/$label/0_5.txt"
  done
done
ln -s "$tmp/imdb/gone.txt" "$tmp/imdb/aclImdb/train/pos/1_9.txt"
cat >"$tmp/imdb.yaml" <<YAML
model: {num_layers: 1, num_heads: 2, model_dim: 8, mlp_dim: 16, attention: {type: softmax}}
data: {dataset: imdb, dir: $tmp/imdb, max_len: 32, batch_size: 2, val_fraction: 0}
optimizer: {type: adam, lr: 0.001}
train: {steps: 1, out: $tmp/run_imdb}
YAML
refused "dangling IMDB link" \
  "^relpos: \[imdb\] $tmp/imdb/aclImdb/train/pos/1_9.txt: open: a link to '.*', which leads to no file \(.*\); mend or remove the link$" \
  -- "$relpos" train "$tmp/imdb.yaml" --quiet

# --- tsv: labels that are no classes ------------------------------------------------------
mkdir -p "$tmp/tsv"
printf '0\tx\n' >"$tmp/tsv/valid.tsv"
printf '0\ty\n' >"$tmp/tsv/test.tsv"
cat >"$tmp/tsv.yaml" <<YAML
model: {num_layers: 1, num_heads: 2, model_dim: 8, mlp_dim: 16, attention: {type: softmax}}
data: {dataset: tsv, dir: $tmp/tsv, max_len: 32, batch_size: 2}
optimizer: {type: adam, lr: 0.001}
train: {steps: 1, out: $tmp/run_tsv}
YAML
# The largest int64 label was an overflow; 10^12 reached the allocator as a 10^12-way head.
for label in 9223372036854775807 1000000000000; do
  printf '0\ta\n%s\tb\n' "$label" >"$tmp/tsv/train.tsv"
  refused "tsv label $label" \
    "^relpos: \[tsv\] $tmp/tsv/train.tsv: line 2: label $label would make [0-9]+ classes for 2 lines" \
    -- "$relpos" train "$tmp/tsv.yaml" --quiet
done
printf '0\ta\n0\tb\n' >"$tmp/tsv/train.tsv"
refused "tsv of one class" \
  "^relpos: \[tsv\] $tmp/tsv/train.tsv: labels: all 0; a classifier needs two classes or more" \
  -- "$relpos" train "$tmp/tsv.yaml" --quiet

# --- Configs YAML accepts and relpos must not ---------------------------------------------
printf 'model:\n  num_layers: 1\n  num_layers: 2\n' >"$tmp/twice.yaml"
refused "a key given twice" \
  "^relpos: \[config\] '$tmp/twice.yaml' line 3: key 'num_layers' repeats the one on line 2" \
  -- "$relpos" train "$tmp/twice.yaml"
printf 'base: {a: 1}\n' >"$tmp/base_map.yaml"
refused "base that is a mapping" \
  "^relpos: \[config\] '$tmp/base_map.yaml' line 1: base must be a file name or a list of file names" \
  -- "$relpos" train "$tmp/base_map.yaml"

# Learning-rate groups: a bad entry is refused at load, a pattern that matches none of the
# model's parameters when the trainer builds the optimizer over them.
refused "an lr group without a rate" \
  "^relpos: \[optimizer\.lr_groups\] each entry is PATTERN=LR .*got '\*\.positional\.\*'" \
  -- "$relpos" train "$tmp/listops.yaml" --set 'optimizer.lr_groups=["*.positional.*"]'
refused "an lr group that matches no parameter" \
  "^relpos: \[optimizer\.lr_groups\] '\*\.nothing\.\*' matches no parameter \(the names look like '[a-z_.0-9]+'\)" \
  -- "$relpos" train "$tmp/listops.yaml" --set 'optimizer.lr_groups=["*.nothing.*=1e-2"]' \
  --out "$tmp/run_lr_groups" --quiet

# A config from a pipe is read; a device that never ends and a folder are refused.
"$relpos" train /dev/stdin --set train.steps=1 --out "$tmp/run_stdin" --quiet <"$tmp/listops.yaml" \
  >/dev/null 2>"$tmp/err" || fail "a config on /dev/stdin: $(cat "$tmp/err")"
refused "a config that never ends" "^relpos: \[config\] '/dev/zero' is longer than 16 MB" \
  -- "$relpos" train /dev/zero
refused "a folder as config" "^relpos: \[config\] cannot read '$tmp': it is a folder" \
  -- "$relpos" train "$tmp"

# --- Paths the operating system refuses: the path and the cause, never an internal error ----
# (a name longer than NAME_MAX, a loop of symbolic links: std::filesystem throws for both)
long_name=$(printf 'x%.0s' {1..300})
refused "a --from name too long" \
  "^relpos: \[filesystem\] cannot use '$long_name': File name too long$" \
  -- "$relpos" data prepare text8 --from "$long_name" --out "$tmp/text8_long"
ln -s "$tmp/loop_b" "$tmp/loop_a"
ln -s "$tmp/loop_a" "$tmp/loop_b"
refused "data.dir in a loop of symbolic links" \
  "^relpos: \[filesystem\] cannot use '$tmp/loop_a': Too many levels of symbolic links$" \
  -- "$relpos" train "$tmp/mnist.yaml" --quiet --set data.dir="$tmp/loop_a"

# --- Numbers on the command line: the flag named, never the library's exception ------------
refused "a seed count that is not a number" "^relpos: \[reproduce\] --seeds expects an integer, got 'abc'" \
  -- "$relpos" reproduce table2 --seeds abc
refused "a batch that is not a number" "^relpos: \[bench\] --batch expects an integer, got 'x'" \
  -- "$relpos" bench index-first --batch x
refused "a time with trailing text" "^relpos: \[bench\] --min-time expects a number, got '1s'" \
  -- "$relpos" bench attention --min-time 1s
touch "$tmp/a_file"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)  # reproduce reads configs/ from there
refused "reproduce --out under a file" \
  "^relpos: \[reproduce\] cannot create the folder '$tmp/a_file/report': Not a directory$" \
  -- bash -c 'cd "$1" && shift && exec "$@"' _ "$root" "$relpos" reproduce table2 --scale tiny \
  --out "$tmp/a_file/report"
refused "a stop before the first step" "^relpos: \[train\] --stop-at-step must be positive, got '0'" \
  -- "$relpos" train "$tmp/listops.yaml" --stop-at-step 0
refused "a token count past int64" "^relpos: \[generate\] --tokens expects an integer" \
  -- "$relpos" generate x.h5 --prompt a --tokens 99999999999999999999
# An empty value (an unset shell variable) is refused for every option and positional; it read
# as "not given" before (bench attention --lengths '' ran every default length).
refused "an empty --lengths" \
  "^relpos: \[bench attention\] --lengths: needs a value, got an empty one \(see relpos bench attention --help\)$" \
  -- "$relpos" bench attention --lengths ""
refused "an empty --out" "^relpos: \[train\] --out: needs a value, got an empty one" \
  -- "$relpos" train "$tmp/listops.yaml" --out ""
refused "an empty checkpoint" "^relpos: \[eval\] CHECKPOINT: needs a value, got an empty one" \
  -- "$relpos" eval ""

# A run's metrics.jsonl damaged before a resume: the file and line named.
"$relpos" train "$tmp/listops.yaml" --out "$tmp/run_log" --stop-at-step 1 --quiet >/dev/null 2>&1 ||
  fail "the tiny ListOps run (stopped at step 1) failed"
echo '{"event": "train", "step": "abc"}' >>"$tmp/run_log/metrics.jsonl"
lines=$(wc -l <"$tmp/run_log/metrics.jsonl")
refused "a metrics.jsonl record with a text step on resume" \
  "^relpos: \[train\] '$tmp/run_log/metrics.jsonl' line $lines: a record whose step is not a number" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_log" --quiet \
  --resume "$tmp/run_log/checkpoints/last.h5"
sed -i '$ s/.*/{"event": "train", "step": 3/' "$tmp/run_log/metrics.jsonl"  # a line cut short
refused "a metrics.jsonl line cut short on resume" \
  "^relpos: \[train\] '$tmp/run_log/metrics.jsonl' line $lines: a line that is not a JSON object" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_log" --quiet \
  --resume "$tmp/run_log/checkpoints/last.h5"

# --- Run folders: a refused start changes nothing; files relpos did not write are kept ------
# A refused --resume rewrote config.yaml with the configuration it refused; a bad --resume into a
# new folder left that folder; --overwrite removed a checkpoints/ folder of someone else's; --out
# was read as YAML ('#' started a comment, `~` meant the default folder).
cp "$tmp/run_log/config.yaml" "$tmp/run_log_config.yaml"
refused "a resume with another configuration" "^relpos: \[train\] '.*' was trained with another configuration" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_log" --quiet --set train.steps=6 \
  --resume "$tmp/run_log/checkpoints/last.h5"
cmp -s "$tmp/run_log_config.yaml" "$tmp/run_log/config.yaml" ||
  fail "a refused --resume changed the run's config.yaml"
refused "a resume from a config file" "^relpos: \[checkpoint\] '$tmp/listops.yaml': not an HDF5 file" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_new" --quiet --resume "$tmp/listops.yaml"
[[ ! -e $tmp/run_new ]] || fail "a refused --resume left the folder $tmp/run_new"
mkdir -p "$tmp/notes/checkpoints" && echo precious >"$tmp/notes/checkpoints/notes.txt"
for flag in "" --overwrite; do
  refused "a folder of other files ${flag:-(no flag)}" \
    "^relpos: \[train\] '$tmp/notes' holds files but no run \(no config.yaml\): train into a new or empty folder" \
    -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/notes" --quiet $flag
done
[[ -f $tmp/notes/checkpoints/notes.txt ]] || fail "--overwrite removed a file relpos did not write"
# A second relpos in a run directory that a training process holds: --overwrite removed the
# running run's files, and a --resume interleaved its records and checkpoints with the run's.
"$relpos" train "$tmp/listops.yaml" --out "$tmp/run_busy" --set train.steps=1000000 --quiet \
  >/dev/null 2>&1 &
busy=$!
for _ in $(seq 600); do [[ -s $tmp/run_busy/log.txt ]] && break; sleep 0.1; done
kill -0 "$busy" 2>/dev/null || fail "the run to hold a directory ended before the check"
refused "an --overwrite of a run that is training" \
  "^relpos: \[train\] '$tmp/run_busy' is in use: another relpos process is training there \(wait for it to end, or train elsewhere with --out\)$" \
  -- timeout 120 "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_busy" --set train.steps=1000000 --quiet \
  --overwrite
[[ -f $tmp/run_busy/config.yaml ]] || fail "an --overwrite refused as in use removed the run's files"
kill "$busy" && wait "$busy" 2>/dev/null
# A run that stops with an error says so in one line on stderr and, after its own lines, in
# log.txt (which said nothing of it).
refused "a diverging run" "^relpos: \[train\] the loss is .* at step [0-9]*; rerun with debug.detect_anomaly" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_nan" --quiet \
  --set 'optimizer={type: sgd, lr: 1.0e30}' --set schedule=constant --set train.steps=20
grep -q '^\[[-0-9: ]*\] stopped: \[train\] the loss is .* at step' "$tmp/run_nan/log.txt" ||
  fail "log.txt of a run stopped by an error does not say why: $(cat "$tmp/run_nan/log.txt")"
"$relpos" train "$tmp/listops.yaml" --out "$tmp/out #1" --quiet --set train.steps=1 >/dev/null 2>&1 ||
  fail "--out with '#' in its name did not train"
[[ -f "$tmp/out #1/config.yaml" ]] || fail "--out '$tmp/out #1' was read as YAML (a comment)"
refused "train.epochs past int64 updates" \
  "^relpos: \[config\] train.epochs 1152921504606846976 of [0-9]+ updates each is more updates than a run counts$" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/run_epochs" --quiet --set train.steps=0 \
  --set train.epochs=1152921504606846976 --set train.eval_every=0
mkfifo "$tmp/base_fifo.yaml"
printf 'base: base_fifo.yaml\n' >"$tmp/on_fifo.yaml"
refused "a FIFO as base" "^relpos: \[config\] '.*on_fifo.yaml': base '.*base_fifo.yaml' is not a regular file$" \
  -- timeout 60 "$relpos" train "$tmp/on_fifo.yaml" --quiet

# --- Checkpoints: diverged weights, damaged bytes -----------------------------------------
"$relpos" train "$tmp/listops.yaml" --quiet >/dev/null 2>"$tmp/train_err" ||
  fail "the tiny ListOps run failed: $(cat "$tmp/train_err")"
checkpoint=$tmp/run/checkpoints/last.h5
if "$python" -c "import h5py" 2>/dev/null; then
  cp "$checkpoint" "$tmp/nan.h5"
  "$python" -c '
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    d = f["params/encoder.norm.weight"]
    v = d[()]
    v[1] = float("nan")
    d[...] = v
' "$tmp/nan.h5" || fail "h5py could not write the NaN checkpoint"
  refused "eval of NaN weights" \
    "^relpos: \[checkpoint\] '$tmp/nan.h5': parameter 'encoder.norm.weight' holds NaN or Inf values" \
    -- "$relpos" eval "$tmp/nan.h5"
else
  echo "SKIPPED: NaN checkpoint case (no h5py in $python)"
fi
# --predictions naming no regular file: as root, `--predictions /dev/full` renamed its temporary
# file over the device. A FIFO stands in for the device (nothing of the system's at stake).
mkfifo "$tmp/pipe.h5"
refused "predictions onto a FIFO" \
  "^relpos: \[predictions\] cannot write '$tmp/pipe.h5': it is a FIFO, not a regular file" \
  -- "$relpos" eval "$checkpoint" --predictions "$tmp/pipe.h5"
[[ -p $tmp/pipe.h5 ]] || fail "predictions onto a FIFO: the FIFO was replaced"
refused "bench --json onto a FIFO" \
  "^relpos: \[bench\] cannot write '$tmp/pipe.h5': it is a FIFO, not a regular file" \
  -- "$relpos" bench attention --lengths 8 --filter softmax --min-time 0.001 --json-out "$tmp/pipe.h5"
# --json-out in a folder that does not exist yet: made when the JSON is written (the run used to
# end in "cannot write ...: No such file or directory" after timing everything); one that cannot
# be made is refused before the run.
"$relpos" bench attention --lengths 8 --filter softmax --min-time 0.001 \
  --json-out "$tmp/new/folder/bench.json" >/dev/null 2>&1 ||
  fail "bench --json-out into a new folder failed"
grep -q '"variant": "softmax"' "$tmp/new/folder/bench.json" ||
  fail "bench --json-out into a new folder: $(head -c 200 "$tmp/new/folder/bench.json")"
refused "bench --json-out under a file" \
  "^relpos: \[bench\] cannot create the folder '$tmp/pipe.h5/sub'" \
  -- "$relpos" bench attention --lengths 8 --filter softmax --min-time 0.001 \
  --json-out "$tmp/pipe.h5/sub/bench.json"
size=$(stat -c %s "$checkpoint")
cp "$checkpoint" "$tmp/damaged.h5"
# 4 KB of flipped bits in the middle of the file.
"$python" -c '
import sys
path, size = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
for i in range(size // 2 - 2048, size // 2 + 2048):
    b[i] ^= 0x5A
open(path, "wb").write(b)
' "$tmp/damaged.h5" "$size"
refused "4 KB damaged in a checkpoint" "^relpos: \[checkpoint\] '$tmp/damaged.h5': .*(damaged|truncated)" \
  -- "$relpos" eval "$tmp/damaged.h5"
for at in 9 100 $((size - 100)); do  # the superblock, the root header, the file's end
  cp "$checkpoint" "$tmp/flipped.h5"
  printf '\x7f' | dd of="$tmp/flipped.h5" bs=1 seek="$at" conv=notrunc status=none
  refused "a checkpoint byte changed at $at" "^relpos: \[checkpoint\] '$tmp/flipped.h5': " \
    -- "$relpos" eval "$tmp/flipped.h5"
done

# --- A disk that fills up during training -------------------------------------------------
# A small tmpfs as the run directory, at sizes that run out while writing config.yaml, log.txt,
# metrics.jsonl or a checkpoint. Needs root (mount); skipped visibly otherwise.
if [[ $(id -u) -eq 0 ]] && mkdir -p "$tmp/full" && mount -t tmpfs -o size=4k tmpfs "$tmp/full" 2>/dev/null; then
  mounts+=("$tmp/full")
  umount "$tmp/full"
  for kb in 4 8 16 32 64 96 128 192 320; do
    mount -t tmpfs -o size=${kb}k tmpfs "$tmp/full"
    "$relpos" train "$tmp/listops.yaml" --out "$tmp/full/run" --set train.steps=4 --quiet \
      >"$tmp/out" 2>"$tmp/err"
    status=$?
    if [[ $status -eq 0 ]]; then
      :  # everything fit
    elif [[ $status -ne 2 ]]; then
      fail "disk full at ${kb} KB: exit $status, expected 2: $(cat "$tmp/err")"
    else
      grep -q "No space left on device" "$tmp/err" ||
        fail "disk full at ${kb} KB does not say so: $(cat "$tmp/err")"
      grep -q "$tmp/full/run" "$tmp/err" || fail "disk full at ${kb} KB names no file: $(cat "$tmp/err")"
      grep -q "infinite loop" "$tmp/err" && fail "disk full at ${kb} KB: HDF5 complains at exit"
      [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "disk full at ${kb} KB: not one line: $(cat "$tmp/err")"
    fi
    # Whatever was written whole is readable: a checkpoint that exists evaluates.
    for c in "$tmp"/full/run/checkpoints/*.h5; do
      [[ -f $c ]] || continue
      "$relpos" eval "$c" >/dev/null 2>"$tmp/eval_err" ||
        fail "disk full at ${kb} KB left an unreadable $c: $(cat "$tmp/eval_err")"
    done
    ls "$tmp"/full/run/checkpoints/*.tmp.* >/dev/null 2>&1 &&
      fail "disk full at ${kb} KB left a temporary checkpoint"
    umount "$tmp/full"
  done
else
  echo "SKIPPED: disk-full cases (mounting a small tmpfs needs root)"
fi

# --- Sizes no machine holds: one buffer (a tensor, or a host table) refused at once -----------
refused "max_len 10^11 (a positions table of 12.8 TB)" \
  "^relpos: \[model\] sequence_classifier with num_layers [0-9]+, num_heads [0-9]+, model_dim [0-9]+, mlp_dim [0-9]+, qkv_dim [0-9]+, max_len 100000000000, vocab_size [0-9]+ does not fit in memory: \[cpu allocator\] out of memory allocating 12800000000128 bytes: the system has [0-9]+ bytes left" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/huge" --set data.max_len=100000000000 --quiet
refused "performer num_features 10^12" \
  "^relpos: \[model\] sequence_classifier with num_layers [0-9]+, num_heads [0-9]+, model_dim [0-9]+, mlp_dim [0-9]+, qkv_dim [0-9]+, max_len [0-9]+, vocab_size [0-9]+ does not fit in memory: \[cpu allocator\] out of memory allocating 64000000000000 bytes" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/huge" --set model.attention.feature_map=performer \
  --set model.attention.num_features=1000000000000 --quiet

# Sizes past 2^40, by name: a size whose bytes wrapped int64 ([2^63 - 1, 64] f32) asked the
# allocator for 0 bytes and trained a step on them; others wrapped in the layers' own sums
# (max_len + CLS + SEP, 2·window + 1 for Shaw).
for set in model.mlp_dim model.num_classes model.attention.num_features; do
  refused "$set 2^63 - 1" \
    "^relpos: \[model(.attention)?\] ${set##*.} 9223372036854775807 is larger than any machine holds \(at most 2\^40\)" \
    -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/huge" --set model.attention.feature_map=performer \
    --set "$set=9223372036854775807" --quiet
done
refused "max_len 2^63 - 1" \
  "^relpos: \[model\] max_len 9223372036854775807 is larger than any machine holds \(at most 2\^40\)" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/huge" --set data.max_len=9223372036854775807 --quiet
refused "shaw window 2^63 - 1" \
  "^relpos: \[model.positional\] window 9223372036854775807 is larger than any machine holds" \
  -- "$relpos" train "$tmp/listops.yaml" --out "$tmp/huge" --set "model.attention={type: softmax}" \
  --set "model.positional={type: shaw, window: 9223372036854775807}" --quiet

# --- A model larger than the memory left ----------------------------------------------------
# model.num_layers 10^9 in a memory cgroup of 1 GiB: Linux grants the buffers and kills the
# process (signal 9, no message) once they are written, unless the allocator refuses first. The
# blocks' parameters are checked against the group's limit once the first block is built.
# Needs a memory cgroup this user can make (root; cgroup v1, or v2 with the memory controller
# delegated); skipped visibly otherwise.
v1=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
v2=$(sed -n 's/^0:://p' /proc/self/cgroup)
for parent in ${v1:+"/sys/fs/cgroup/memory$v1"} ${v2:+"/sys/fs/cgroup$v2"}; do
  mkdir "$parent/relpos_test_$$" 2>/dev/null || continue
  cgroup="$parent/relpos_test_$$"
  for limit in memory.limit_in_bytes memory.max; do  # v1, v2
    [[ -f $cgroup/$limit ]] && echo $((1 << 30)) >"$cgroup/$limit" 2>/dev/null && break 2
  done
  rmdir "$cgroup"  # not a memory cgroup (a v1 host's /sys/fs/cgroup is a tmpfs)
  cgroup=""
done
if [[ -n $cgroup ]]; then
  refused "num_layers 10^9 in 1 GiB" \
    "^relpos: \[model\] sequence_classifier with num_layers [0-9]+, num_heads [0-9]+, model_dim [0-9]+, mlp_dim [0-9]+, qkv_dim [0-9]+, max_len [0-9]+, vocab_size [0-9]+ does not fit in memory: \[cpu allocator\] the parameters of 999999999 more blocks of [0-9]+ bytes take [0-9]+ bytes: the system has [0-9]+ bytes left \([0-9]+ held by tensors, 16777216 kept for the rest of the process\)$" \
    -- bash -c 'echo $$ >"$1/cgroup.procs" && exec "${@:2}"' _ "$cgroup" "$relpos" train \
    "$tmp/listops.yaml" --out "$tmp/huge" --set model.num_layers=1000000000 --set model.mlp_dim=4096 --quiet
else
  echo "SKIPPED: out-of-memory case (no memory cgroup can be made here)"
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures bad-input check(s) failed" >&2
  exit 1
fi
echo "bad input: all checks passed"
