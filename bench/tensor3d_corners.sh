#!/usr/bin/env bash
# The tutorial's question on 4 ranks: is [4,1,1] (Megatron-like), [2,2,1] or [1,1,4] (FSDP-like)
# fastest here? bin/tensor3d at batch 32 on each grid, every overlap flag off and then all on;
# one table: measured step time (median over timed iterations of the slowest rank), exposed
# communication (same statistic), the analytic bytes one rank sends per iteration on a ring
# (tests/check_tensor3d_volumes.py, recomputed from the file's config), whether every recorded
# collective equals its analytic size, and peak memory per rank. Result files go to
# results/bench/tensor3d-<grid>[-overlap].h5.
# The model is smaller than the tutorial's (H = 512, 4 blocks, 32×32 images instead of
# H = 2048, 64×64; 12 iterations, 2 of them warm-up) so the six runs take about 25 s on 2
# cores; extra bin/tensor3d options (e.g. --hidden 2048 --image-size 64) are passed on.
# With 4 ranks on fewer cores the ranks time-share them and MPI's waits spin, so "exposed
# communication" there includes waiting for other ranks' compute. TENSOR3D=path runs another
# build. Exit status 1 if a recorded volume differs from the analytic one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tensor3d=${TENSOR3D:-bin/tensor3d}
shape=(--hidden 512 --layers 4 --image-size 32 --batch 32 --iters 12 --warmup 2 --print-every 0
       --eval-samples 32)
overlap=(--cache-weights --overlap-dx --defer-dw-reduce --prefetch-weights)
mkdir -p results/bench

files=()
for dims in 4,1,1 2,2,1 1,1,4; do
  for suffix in "" -overlap; do
    out=results/bench/tensor3d-${dims//,/x}$suffix.h5
    flags=()
    [[ -n $suffix ]] && flags=("${overlap[@]}")
    OPENBLAS_NUM_THREADS=1 mpiexec -n 4 "$tensor3d" "${shape[@]}" --tp-dims "$dims" \
      "${flags[@]}" "$@" --out "$out" >/dev/null
    files+=("$out")
  done
done

.venv/bin/python - "${files[@]}" <<'EOF'
import json
import sys

import h5py
import numpy as np

sys.path.insert(0, "tests")
import check_tensor3d_volumes as volumes  # noqa: E402


def median_of_slowest(table, warmup):
    return float(np.median(table[warmup:].max(axis=1)))


rows, configs = [], []
for path in sys.argv[1:]:
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["config_json"])
        warmup = int(f.attrs["warmup_iterations"])
        grid = volumes.grid_of(f.attrs)
        mode = str(f.attrs["mode"])
        step = median_of_slowest(f["timing/step"][()], warmup)
        exposed = median_of_slowest(f["timing/exposed_comm"][()], warmup)
        measured = {k: f["comm"][k]["bytes"][()] for k in f["comm"]}
        peak = int(f["memory/peak_bytes"][()].max())
    configs.append(config)
    want = volumes.analytic(config, grid, mode=mode)
    sent = sum(volumes.ring_bytes(k, amount, group) for k, (amount, group) in want.items())
    equal = set(measured) == set(want) and all(np.all(measured[k] == want[k][0]) for k in want)
    flags = "all four" if config.get("cache-weights") else "off"
    rows.append((f"[{grid[0]},{grid[1]},{grid[2]}]", flags, step * 1e3, exposed * 1e3,
                 sent / 2**20, "yes" if equal else "NO", peak / 2**20))

first = configs[0]
print(f"bin/tensor3d on 4 ranks, batch {first['batch']}, H = {first['hidden']}, "
      f"{first['layers']} blocks, {first['image-size']}x{first['image-size']} images, "
      f"{first['precision']}")
head = ("grid", "overlap", "step ms", "exposed comm ms", "analytic MiB sent/rank/iter",
        "measured = analytic", "peak MiB/rank")
print(f"{head[0]:<9} {head[1]:<9} {head[2]:>9} {head[3]:>16} {head[4]:>28} {head[5]:>20} "
      f"{head[6]:>14}")
for g, o, s, e, v, eq, p in rows:
    print(f"{g:<9} {o:<9} {s:>9.1f} {e:>16.1f} {v:>28.3f} {eq:>20} {p:>14.1f}")
sys.exit(0 if all(r[5] == "yes" for r in rows) else 1)
EOF
