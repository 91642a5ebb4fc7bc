#!/usr/bin/env python3
"""The figures README.md states about its demos, found in its text, beside the same figures
measured from run folders (tools/measure-readme.sh trains them).

  readme_figures.py README.md GROUP=RUN_DIR... [--data-dir DIR] [--check]
  readme_figures.py README.md --sentences

GROUP is demo (configs/demo/mnist_sikf_fastrpb2d.yaml), lm (configs/demo/lm_moby_dick.yaml),
lm_compare_lm and lm_compare_xl (the 1,000-update transformer_lm / transformer_xl comparison).
Each figure is found by a pattern over the README's text (whitespace folded); one that is not
found is an error, so a rephrased sentence needs its pattern here too. With --check, exit 1
when a deterministic figure (accuracy, macro-F1, bpc, curve points, parameter counts) differs
from the README beyond its tolerance; times are printed, never checked. With --sentences, train
nothing: exit 1 unless every figure's sentence is in the README, so a rewording is caught in
seconds rather than after a demo's training (the `readme_sentences` test).
"""
import argparse
import json
import math
import os
import re
import sys
from collections import Counter

# Results are deterministic on one CPU; another CPU's BLAS kernels round differently and can
# move a 2,000-digit accuracy by a few digits, so the checks allow that much.
PERCENT_TOLERANCE = 0.3  # points of accuracy / macro-F1
BPC_TOLERANCE = 0.01


def summary(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)


def evals(run):
    out = []
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if record.get("event") == "eval" and record.get("split") == "val":
                out.append(record)
    return out


def val_at(run, key, step):
    for record in evals(run):
        if record["step"] == step:
            return record[key]
    raise SystemExit(f"readme_figures: {run}/metrics.jsonl has no validation at step {step}")


def unigram_bits(data_dir):
    """Bits per test character under the training text's character frequencies."""
    folder = os.path.join(data_dir, "moby-dick")
    with open(os.path.join(folder, "train.txt"), "rb") as f:
        counts = Counter(f.read())
    with open(os.path.join(folder, "test.txt"), "rb") as f:
        test = f.read()
    total = sum(counts.values())
    return -sum(math.log2(counts[b] / total) for b in test) / len(test)


def figure_table(data_dir):
    """{group: [(name, README pattern, measure(run) -> value, kind)]} for every figure."""
    demo = [
        ("test accuracy, %", r"reaches \*\*([0-9.]+)% test accuracy\*\*",
         lambda r: 100 * summary(r)["test_best"]["accuracy"], "percent"),
        ("test macro-F1, %", r"\(macro-F1 ([0-9.]+)%\) on the 2,000 held-out digits",
         lambda r: 100 * summary(r)["test_best"]["macro_f1"], "percent"),
        ("val accuracy epoch 1, %", r"validation accuracy goes ([0-9.]+)% → [0-9.]+% → [0-9.]+%",
         lambda r: 100 * evals(r)[0]["accuracy"], "percent"),
        ("val accuracy epoch 4, %", r"validation accuracy goes [0-9.]+% → ([0-9.]+)% → [0-9.]+%",
         lambda r: 100 * evals(r)[3]["accuracy"], "percent"),
        ("val accuracy epoch 12, %",
         r"validation accuracy goes [0-9.]+% → [0-9.]+% → ([0-9.]+)% over epochs 1, 4 and 12",
         lambda r: 100 * evals(r)[11]["accuracy"], "percent"),
        ("wall time, s", r"on a quiet 2-core CPU \(([0-9.]+) s measured[^)]*\) and reaches \*\*[0-9.]+% test",
         lambda r: summary(r)["wall_time_s"], "time"),
    ]
    lm = [
        ("parameters, M", r"d 128, ([0-9.]+)M parameters, 4,000 updates",
         lambda r: summary(r)["parameters"] / 1e6, "count"),
        ("test bpc (best)", r"reaches \*\*([0-9.]+) bits per character\*\*",
         lambda r: summary(r)["test_best"]["bpc"], "bpc"),
        ("test bpc (last)", r"best-validation checkpoint; ([0-9.]+) with the last\)",
         lambda r: summary(r)["test_last"]["bpc"], "bpc"),
        ("unigram entropy, bits", r"against ([0-9.]+) bits for the training text's character",
         lambda r: unigram_bits(data_dir), "bpc"),
        ("val bpc at 1,000", r"validation goes ([0-9.]+) → [0-9.]+ → [0-9.]+ bpc at updates 1,000",
         lambda r: val_at(r, "bpc", 1000), "bpc"),
        ("val bpc at 2,000", r"validation goes [0-9.]+ → ([0-9.]+) → [0-9.]+ bpc at updates 1,000",
         lambda r: val_at(r, "bpc", 2000), "bpc"),
        ("val bpc at 3,000", r"validation goes [0-9.]+ → [0-9.]+ → ([0-9.]+) bpc at updates 1,000",
         lambda r: val_at(r, "bpc", 3000), "bpc"),
        ("wall time, s", r"trains in [0-9]+ to [0-9]+ minutes on a quiet 2-core CPU \(([0-9.]+) s measured",
         lambda r: summary(r)["wall_time_s"], "time"),
    ]
    compare_lm = [
        ("transformer_lm test bpc, 1,000 updates",
         r"`transformer_lm` reaches ([0-9.]+) test bits per character where",
         lambda r: summary(r)["test_best"]["bpc"], "bpc"),
    ]
    compare_xl = [
        ("transformer_xl test bpc, 1,000 updates",
         r"test bits per character where `transformer_xl` reaches ([0-9.]+):",
         lambda r: summary(r)["test_best"]["bpc"], "bpc"),
    ]
    return {"demo": demo, "lm": lm, "lm_compare_lm": compare_lm, "lm_compare_xl": compare_xl}


def figures(runs, data_dir):
    """(group, name, README pattern, measure() -> value, kind) for every figure of the runs."""
    table = figure_table(data_dir)
    for group, run in runs:
        if group not in table:
            raise SystemExit(f"readme_figures: unknown group '{group}' ({', '.join(table)})")
        for name, pattern, measure, kind in table[group]:
            yield group, name, pattern, lambda m=measure, r=run: m(r), kind


def agrees(stated_text, measured, kind):
    stated = float(stated_text)
    if kind == "percent":
        return abs(measured - stated) <= PERCENT_TOLERANCE
    if kind == "bpc":
        return abs(measured - stated) <= BPC_TOLERANCE
    if kind == "count":  # stated to its printed digits
        decimals = len(stated_text.split(".")[1]) if "." in stated_text else 0
        return round(measured, decimals) == stated
    return True  # times: measured, not checked


def missing_sentences(text, table):
    """1 when a figure's pattern finds nothing in the README's text, or more than one sentence."""
    failures = 0
    for group, rows in table.items():
        for name, pattern, _, _ in rows:
            count = len(re.findall(pattern, text))
            if count != 1:
                failures += 1
                print(f"readme_figures: {group}: {name}: {count} sentences match /{pattern}/",
                      file=sys.stderr)
    total = sum(len(rows) for rows in table.values())
    print(f"readme_figures: {total - failures} of {total} figures' sentences found once")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("readme")
    parser.add_argument("runs", nargs="*", metavar="GROUP=RUN_DIR")
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--sentences", action="store_true")
    a = parser.parse_args()
    with open(a.readme, encoding="utf-8") as f:
        text = " ".join(f.read().split())
    if a.sentences:
        return missing_sentences(text, figure_table(a.data_dir))
    if not a.runs:
        parser.error("give GROUP=RUN_DIR runs, or --sentences")
    runs = [tuple(item.split("=", 1)) for item in a.runs]
    failures = []
    print(f"{'figure':<56} {'README':>10} {'measured':>10}  check")
    for group, name, pattern, measure, kind in figures(runs, a.data_dir):
        found = re.search(pattern, text)
        label = f"{group}: {name}"
        if found is None:
            failures.append(f"{label}: the README has no sentence matching /{pattern}/")
            print(f"{label:<56} {'(missing)':>10}")
            continue
        value = measure()
        ok = agrees(found.group(1), value, kind)
        verdict = "time, not checked" if kind == "time" else ("ok" if ok else "DIFFERS")
        print(f"{label:<56} {found.group(1):>10} {value:>10.4f}  {verdict}")
        if not ok:
            failures.append(f"{label}: README says {found.group(1)}, measured {value:.4f}")
    for failure in failures:
        print(f"readme_figures: {failure}", file=sys.stderr)
    return 1 if a.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
