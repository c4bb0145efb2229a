#!/usr/bin/env bash
# MPI tests of bin/tensor2d (2D SUMMA tensor parallelism) on the CPU backend: fp64 --verify against
# serial (losses and final weights within 1e-10 relative) on 1×1, 2×2 and 3×3 grids (9 ranks
# oversubscribed), on 2×2 × 2 replicas and 1×1 × 4 replicas, plus --block plain, an F set by
# --ffn-hidden that is no multiple of H, and fp32; then uneven blocks, where q divides neither the
# batch, S², H, F nor (at q = 3) the 10 classes; every run's recorded bytes must equal the analytic
# formulas exactly on every rank (tests/check_tensor2d_volumes.py), and rank 0's printed bytes and
# calls the analytic ones; weight memory per rank must be
# 1/q² of the model's and peak memory must fall with q. --checkpoint-activations (fp32 and fp64 at q
# = 2, q = 2 × 2 replicas and uneven q = 3; bf16 at q = 2 × 2) must give bit-identical /train/loss,
# pass --verify and its volumes (the recompute's broadcasts and all-gathers included), time the
# recompute inside backward and lower peak memory on every rank. --inference --verify must pass
# (fp64; q = 2, uneven q = 3, q = 2 × 2) with forward-only volumes and serial's accuracy; each
# epoch's evaluation, whose last batch leaves some grid rows without samples, must give serial's
# accuracy. Grids that would leave a part of a split empty must fail on every rank with one line
# each, never hang (every run has a timeout). Ends with "N passed, N failed". TENSOR2D=path tests
# another build (SERIAL=path: bin/serial).
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

bin=${TENSOR2D:-bin/tensor2d}
serial=${SERIAL:-bin/serial}

# S² = 36, H = 12, F = 24 and B = 12 divide by 2 and 3 (and B/2 by 2 for two replicas); the
# classifier's 10 outputs do not divide by 3 (parts 4, 3, 3).
tiny=(--hidden 12 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 3 --warmup 1
      --print-every 0 --eval-samples 12)
model=()  # the run function's model; empty: tiny
# Uneven blocks at q = 3: S² = 25, H = 10, F = 20, B = 7 and the 10 classes all leave a
# remainder (parts 9/8/8, 4/3/3, 7/7/6, 3/2/2, 4/3/3).
uneven3=(--hidden 10 --layers 2 --image-size 5 --ffn-mult 2 --batch 7 --iters 3 --warmup 1
         --print-every 0 --eval-samples 12)
# Uneven blocks at q = 2: S² = 25, H = 9, F = 27 and B = 7 are odd (B = 9 over 2 replicas × 2
# grid rows: 3/2/2/2).
uneven2=(--hidden 9 --layers 2 --image-size 5 --ffn-mult 3 --batch 7 --iters 3 --warmup 1
         --print-every 0 --eval-samples 12)

# run NAME RANKS ARGS...: trains the model in ${model[@]} (tiny unless set) with --verify; on
# PASS sets last_out to the result file and checks the volumes.
run() {
  local name=$1 ranks=$2
  shift 2
  last_out=
  local -a base=("${tiny[@]}")
  ((${#model[@]} > 0)) && base=("${model[@]}")
  local out=$tmp/$ranks-$(echo "${base[*]} $*" | tr -c 'a-z0-9' '_').h5 log=$tmp/log
  run_verified "$name" 60 "$log" "$ranks" "$bin" "${base[@]}" "$@" --verify --out "$out" ||
    return 1
  # "verify: PASS  relative error E at ITEM, tolerance there T (...)": show E, ITEM and T.
  local figure
  figure=$(sed -n 's/^verify: PASS *\(relative error [^ ]* at [^,]*\), \(tolerance there [^ ]*\).*/\1, \2/p' "$log")
  if [[ -z $figure ]]; then
    not_ok "$name" "the verify line carries no error figure: $(grep '^verify: PASS' "$log")"
    return 1
  fi
  ok "$name matches serial ($figure)"
  cp "$log" "$tmp/last.log"
  last_out=$out
  # Rank 0's table: every collective's bytes and calls as counted (none on a 1 × 1 grid).
  if grep -q "DIFFERENT" "$log" || ! grep -q "communication per iteration" "$log"; then
    not_ok "$name printed volumes" "$(grep -A9 'communication per iteration' "$log" | tr '\n' '|')"
  else
    ok "$name: printed analytic bytes and calls equal the measured ones"
  fi
  if ((have_h5py)); then
    expect_output "$name volumes" "$python" tests/check_tensor2d_volumes.py "$out"
  else
    skip "$name volumes" "h5py not available in .venv"
  fi
}

# Weight bytes per rank as bin/tensor2d reports them.
weight_bytes() { grep -o 'weight blocks [0-9]*' "$tmp/last.log" | grep -o '[0-9]*$'; }

declare -A peak_file weights
for q in 1 2 3; do
  if run "q=$q ($((q * q)) ranks), fp64" $((q * q)) --tp-dims "$q,$q" --precision fp64; then
    peak_file[$q]=$last_out
    weights[$q]=$(weight_bytes)
  fi
done

# compare_checkpointed NAME STORED_FILE RANKS ARGS...: runs ARGS with --checkpoint-activations
# (through run: --verify, volumes) and compares with STORED_FILE, the same run without it:
# /train/loss bit for bit, /timing/recompute positive on every rank only when checkpointing,
# and /memory/peak_bytes lower on every rank.
compare_checkpointed() {
  local name="$1 --checkpoint-activations" stored=$2 ranks=$3
  shift 3
  if [[ -z $stored ]]; then
    not_ok "$name" "the run without checkpointing failed"
    return 1
  fi
  run "$name" "$ranks" "$@" --checkpoint-activations || return 1
  if ((!have_h5py)); then
    echo "skip - $name against stored: h5py not available in .venv"
    return 0
  fi
  local why
  if why=$("$python" - "$stored" "$last_out" <<'PY'
import sys, h5py, numpy as np
stored, rerun = (h5py.File(p, "r") for p in sys.argv[1:])
problems = []
a, b = stored["train/loss"][()], rerun["train/loss"][()]
if not np.array_equal(a, b):
    problems.append(f"losses differ: {a.tolist()} != {b.tolist()}")
if np.any(stored["timing/recompute"][()] != 0):
    problems.append("recompute timed without checkpointing")
recompute = rerun["timing/recompute"][()]
if not np.all(recompute > 0):
    problems.append(f"recompute not timed on every rank: {recompute.tolist()}")
if not np.all(recompute <= rerun["timing/backward"][()]):
    problems.append("recompute is not inside backward")
pa, pb = stored["memory/peak_bytes"][()], rerun["memory/peak_bytes"][()]
if not np.all(pb < pa):
    problems.append(f"peak bytes per rank not lower: {pa.tolist()} -> {pb.tolist()}")
distinct = lambda values: "/".join(map(str, sorted(set(values.tolist()))))
print("; ".join(problems) if problems else
      f"{len(a)} losses bitwise equal, peak bytes per rank {distinct(pa)} -> {distinct(pb)} "
      f"(saved {distinct(pa - pb)})")
sys.exit(1 if problems else 0)
PY
  ); then
    ok "$name against stored: $why"
  else
    not_ok "$name against stored" "$why"
  fi
}

compare_checkpointed "q=2 (4 ranks), fp64" "${peak_file[2]:-}" 4 --tp-dims 2,2 --precision fp64
run "q=2 x dp=2 (8 ranks), fp64" 8 --tp-dims 2,2 --dp 2 --precision fp64
compare_checkpointed "q=2 x dp=2 (8 ranks), fp64" "$last_out" 8 --tp-dims 2,2 --dp 2 \
  --precision fp64
run "q=1 x dp=4 (4 ranks), fp64" 4 --tp-dims 1,1 --dp 4 --precision fp64
run "q=2, --block plain, fp64" 4 --tp-dims 2,2 --block plain --precision fp64
run "q=2, --ffn-hidden 7 (F no multiple of H, nor of q), fp64" 4 --tp-dims 2,2 --ffn-hidden 7 \
  --precision fp64
run "q=2, fp32" 4 --tp-dims 2,2 --precision fp32
compare_checkpointed "q=2, fp32" "$last_out" 4 --tp-dims 2,2 --precision fp32
run "q=2 x dp=2, fp32" 8 --tp-dims 2,2 --dp 2 --precision fp32
compare_checkpointed "q=2 x dp=2, fp32" "$last_out" 8 --tp-dims 2,2 --dp 2 --precision fp32
# 16-bit payloads (2 B per element), the "data" group's in fp32.
run "q=2 x dp=2, bf16 --fp32-grad-comm" 8 --tp-dims 2,2 --dp 2 --precision bf16 --fp32-grad-comm
compare_checkpointed "q=2 x dp=2, bf16 --fp32-grad-comm" "$last_out" 8 --tp-dims 2,2 --dp 2 \
  --precision bf16 --fp32-grad-comm

model=("${uneven3[@]}")
run "uneven q=3 (9 ranks; S² 25, H 10, F 20, B 7), fp64" 9 --tp-dims 3,3 --precision fp64
compare_checkpointed "uneven q=3 (9 ranks), fp64" "$last_out" 9 --tp-dims 3,3 --precision fp64
model=("${uneven2[@]}")
run "uneven q=2 (4 ranks; S² 25, H 9, F 27, B 7), fp64" 4 --tp-dims 2,2 --precision fp64
run "uneven q=2 x dp=2 (8 ranks; B 9), fp64" 8 --tp-dims 2,2 --dp 2 --batch 9 --precision fp64
run "uneven q=2, --block plain, fp64" 4 --tp-dims 2,2 --block plain --precision fp64
run "uneven q=2, fp32" 4 --tp-dims 2,2 --precision fp32
model=()

# Activations that matter: H 64, F 256, 4 blocks, 32 rows per grid row. Checkpointing keeps
# 3 blocks' LayerNorm and ReLU outputs fewer: 3 · 32 · (32 + 128) · 8 B = 122,880 B per rank.
model=(--hidden 64 --layers 4 --image-size 8 --ffn-mult 4 --batch 64 --iters 2 --warmup 1
       --print-every 0 --eval-samples 64)
run "H 64, 4 blocks, batch 64, q=2, fp64" 4 --tp-dims 2,2 --precision fp64
compare_checkpointed "H 64, 4 blocks, batch 64, q=2, fp64" "$last_out" 4 --tp-dims 2,2 \
  --precision fp64
model=()

# same_accuracy NAME FILE SERIAL_ARGS...: bin/serial with SERIAL_ARGS must record the same
# /train/test_accuracy as FILE (the correct counts evaluate() summed over the grid).
same_accuracy() {
  local name=$1 file=$2
  shift 2
  if ((!have_h5py)); then
    echo "skip - $name: h5py not available in .venv"
    return 0
  fi
  if [[ -z $file ]]; then
    not_ok "$name" "the tensor2d run failed"
    return 1
  fi
  if ! timeout 60 "$serial" "$@" --out "$tmp/serial.h5" >"$tmp/serial.log" 2>&1; then
    not_ok "$name" "bin/serial failed: $(tail -n 2 "$tmp/serial.log" | tr '\n' ' ')"
    return 1
  fi
  local why
  if why=$("$python" - "$file" "$tmp/serial.h5" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r")["train/test_accuracy"][()] for p in sys.argv[1:])
print(f"{a.tolist()} vs serial {b.tolist()}")
sys.exit(0 if len(a) > 0 and np.array_equal(a, b) else 1)
PY
  ); then
    ok "$name: $why"
  else
    not_ok "$name" "$why"
  fi
}

# Inference: forward passes over test batches, each batch's loss against serial forward passes;
# 10 batches (of 120 test samples, so that the correct counts are not all 0 or 1).
more=(--eval-samples 120 --iters 10)
run "--inference q=2 (4 ranks), fp64" 4 --tp-dims 2,2 --precision fp64 --inference "${more[@]}"
same_accuracy "--inference q=2 accuracy" "$last_out" "${tiny[@]}" --precision fp64 --inference \
  "${more[@]}"
run "--inference q=2 x dp=2 (8 ranks), fp64" 8 --tp-dims 2,2 --dp 2 --precision fp64 --inference \
  "${more[@]}"
same_accuracy "--inference q=2 x dp=2 accuracy" "$last_out" "${tiny[@]}" --precision fp64 \
  --inference "${more[@]}"
model=("${uneven3[@]}")
run "--inference uneven q=3 (9 ranks), fp64" 9 --tp-dims 3,3 --precision fp64 --inference \
  "${more[@]}"
same_accuracy "--inference uneven q=3 accuracy" "$last_out" "${uneven3[@]}" --precision fp64 \
  --inference "${more[@]}"
model=()

# Each epoch's evaluation (training mode) over 50 test samples in batches of 12 and a last one
# of 2: over 2 replicas × 2 grid rows that one leaves replica 1's grid rows no sample. A bright
# band per class makes the data learnable, so the accuracies move (about 0.4 to 0.5).
idx=$tmp/idx
if ((have_h5py)) && "$python" tests/make_idx.py "$idx" 24 50 --bands; then
  epoch=(--hidden 12 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --epochs 3 --warmup 1
         --lr 0.02 --print-every 0 --eval-samples 0 --data "idx:$idx" --precision fp64)
  model=("${epoch[@]}")
  run "3 epochs on a 24-sample idx set, q=2 x dp=2, fp64" 8 --tp-dims 2,2 --dp 2
  same_accuracy "epoch-end evaluation with empty grid rows" "$last_out" "${epoch[@]}"
  model=()
else
  echo "skip - epoch-end evaluation: numpy/h5py not available in .venv"
fi

# Memory: q = 2 divides every Linear, so each rank holds exactly 1/4 of the weights; with q = 3
# rank 0 holds 4 of the classifier's 10 rows, yet its blocks still shrink; the peak falls with q.
if [[ -n ${weights[1]:-} && -n ${weights[2]:-} && -n ${weights[3]:-} ]]; then
  if ((weights[2] * 4 == weights[1] && weights[3] < weights[2])); then
    ok "weight bytes per rank ${weights[1]} / ${weights[2]} / ${weights[3]} at q = 1 / 2 / 3"
  else
    not_ok "weight bytes per rank" "${weights[1]} / ${weights[2]} / ${weights[3]} at q = 1 / 2 / 3"
  fi
  if ((have_h5py)); then
    if why=$("$python" - "${peak_file[1]}" "${peak_file[2]}" "${peak_file[3]}" <<'PY'
import sys, h5py
peaks = [int(h5py.File(p, "r")["memory/peak_bytes"][()].max()) for p in sys.argv[1:]]
print(" / ".join(map(str, peaks)))
sys.exit(0 if peaks[0] > peaks[1] > peaks[2] else 1)
PY
    ); then
      ok "peak bytes per rank fall with q: $why"
    else
      not_ok "peak bytes per rank fall with q" "$why"
    fi
  else
    echo "skip - peak memory: h5py not available in .venv"
  fi
else
  not_ok "memory per rank" "a q = 1, 2 or 3 run failed"
fi

# Bad grids and empty parts: non-zero exit on every rank, one line per rank naming the problem.
# refused NAME RANKS PATTERN ARGS...: the tiny run with ARGS must be refused on every rank in
# one line naming PATTERN (the harness's expect_refusal).
refused() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  expect_refusal "$name" "$ranks" "$pattern" "$bin" "${tiny[@]}" "$@"
}
refused "--tp-dims 2,3" 4 "must be square" --tp-dims 2,3
refused "--tp-dims ''" 4 "--tp-dims" --tp-dims ""
refused "--tp-dims 3,3 on 4 ranks" 4 "--tp-dims 3,3" --tp-dims 3,3
refused "--dp 3 with a 2x2 grid on 8 ranks" 8 "--dp 3" --tp-dims 2,2 --dp 3
# Uneven splits are fine, empty parts are not.
refused "--hidden 2 on a 3x3 grid" 9 "--hidden 2" --tp-dims 3,3 --hidden 2
refused "--image-size 1 on a 2x2 grid" 4 "--image-size 1" --tp-dims 2,2 --image-size 1
refused "--batch 3 over 2 replicas of a 2x2 grid" 8 "--batch 3" --tp-dims 2,2 --dp 2 \
  --batch 3

finish
