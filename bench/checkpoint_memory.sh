#!/usr/bin/env bash
# Activation checkpointing in every scheme (issue 8): the tutorial config (H 2048, 4 blocks,
# 64×64 inputs) at global batch 256, fp32, each executable run without and with
# --checkpoint-activations (2 iterations, 1 warm-up), then one table: peak memory of the largest
# rank without and with, the saving, on how many ranks the peak fell (1F1B's last stage holds
# one micro-batch of one block: nothing to save there), the recompute time and the step ratio.
# Usage: bench/checkpoint_memory.sh [OUT_DIR]   (default results/bench/checkpoint)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=${1:-results/bench/checkpoint}
mkdir -p "$out"
common=(--config inputs/tutorial.json --batch 256 --iters 2 --warmup 1 --print-every 0
        --eval-samples 256)
export OPENBLAS_NUM_THREADS=1

# name ranks program args...
runs=(
  "serial 1 bin/serial"
  "data-ddp 2 bin/data --zero 0"
  "data-zero3 2 bin/data --zero 3"
  "pipeline-1f1b 4 bin/pipeline --pp 4 --micro-batches 8 --schedule 1f1b"
  "tensor1d 4 bin/tensor1d --tp 4"
  "tensor2d 4 bin/tensor2d --tp-dims 2,2"
  "tensor3d 4 bin/tensor3d --tp-dims 2,2,1"
)
files=()
for spec in "${runs[@]}"; do
  read -r name ranks program args <<<"$spec"
  for mode in stored checkpointed; do
    flag=()
    [[ $mode == checkpointed ]] && flag=(--checkpoint-activations)
    echo "  $name ($ranks rank(s)), $mode ..."
    # shellcheck disable=SC2086
    mpiexec -n "$ranks" "$program" "${common[@]}" $args "${flag[@]}" \
      --out "$out/$name-$mode.h5" >/dev/null
    files+=("$out/$name-$mode.h5")
  done
done
.venv/bin/python - "${files[@]}" <<'PY'
import sys
import h5py
import numpy as np

print(f"{'run':<16}{'peak MB stored':>16}{'checkpointed':>14}{'saved':>8}{'ranks lower':>13}"
      f"{'recompute ms':>14}{'step ratio':>12}")
paths = sys.argv[1:]
for stored, checkpointed in zip(paths[0::2], paths[1::2]):
    a, b = h5py.File(stored, "r"), h5py.File(checkpointed, "r")
    ra, rb = a["memory/peak_bytes"][()], b["memory/peak_bytes"][()]
    pa, pb = ra.max() / 1e6, rb.max() / 1e6
    lower = f"{int((rb < ra).sum())}/{len(ra)}"
    warm = int(a.attrs["warmup_iterations"])
    step = lambda f: float(np.median(f["timing/step"][warm:].max(axis=1)))
    recompute = float(np.median(b["timing/recompute"][warm:].max(axis=1))) * 1e3
    name = stored.rsplit("/", 1)[-1].removesuffix("-stored.h5")
    verdict = "" if pb < pa else "   NOT LOWER"
    print(f"{name:<16}{pa:>16.1f}{pb:>14.1f}{100 * (pa - pb) / pa:>7.1f}%{lower:>13}{recompute:>14.1f}"
          f"{step(b) / step(a):>12.2f}{verdict}")
PY
