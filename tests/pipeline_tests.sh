#!/usr/bin/env bash
# MPI equivalence tests of bin/pipeline on the CPU backend in fp64 (ranks oversubscribed): for
# P = 2, 3, 4 stages, GPipe and 1F1B with M = 1, P, 2P micro-batches, interleaved (v = 2), ZB-H1
# and ZB-V with M = P, 2P (also with D = 2, checkpointing, plain blocks and --inference), and
# for P x D = 4 with D = 2 replicas, the run must match serial (--verify: losses and final
# weights within 1e-10 relative), each iteration's recorded p2p and all-reduce bytes must equal
# the analytic volumes
# (tests/check_pipeline_result.py), and each stage's peak activation memory must be M
# micro-batches under GPipe and min(P - s, M) under 1F1B. Bad grids must fail on every rank
# with one line each, never hang (every run has a timeout). Ends with "N passed, N failed".
# Evaluation (a forward-only pass through the stages) must give serial's test accuracy.
# --checkpoint-activations must pass --verify and give bitwise the losses of the same run
# without it (fp32 and fp64, P = 2 and 4, both schedules), with its recompute timed and with a
# lower peak memory on every rank; --inference (the forward-only stream) must pass --verify
# against serial forward passes and move exactly the forward activations.
# PIPELINE=path and SERIAL=path run other builds of the executables.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

pipeline=${PIPELINE:-$repo/bin/pipeline}
serial=${SERIAL:-$repo/bin/serial}

# 24 rows: every M below divides the replica's rows (24, or 12 with D = 2).
tiny=(--hidden 12 --layers 4 --image-size 5 --ffn-mult 2 --batch 24 --iters 3 --warmup 1
      --print-every 0 --eval-samples 30 --precision fp64)

# The micro-batches column of each stage row of the report must be what the schedule holds
# (GPipe, 1F1B; the other schedules' peaks, with chunks of unequal slots and W's inputs, are
# checked byte for byte against the estimate by memory_tests.sh).
check_activation_slots() {
  local log=$1 schedule=$2 stages=$3 micro=$4
  [[ $schedule == gpipe || $schedule == 1f1b ]] || return 0
  awk -v sched="$schedule" -v p="$stages" -v m="$micro" '
    /^pipeline: / { table = 1; next }
    table && /^  [0-9]+ / {
      s = $1; want = (sched == "gpipe" || p - s > m) ? m : p - s
      if ($NF + 0 != want) { printf "stage %d holds %s micro-batches, not %d\n", s, $NF, want; bad = 1 }
      rows++
    }
    END { if (rows != p) { printf "%d stage rows, not %d\n", rows, p; bad = 1 }; exit bad }' "$log"
}

# pass_with_volumes NAME WHAT OUT LOG: tests/check_pipeline_result.py must accept OUT, then one
# "ok - NAME WHAT (verify figure); its verdict" (volumes unchecked without h5py).
pass_with_volumes() {
  local name=$1 what=$2 out=$3 log=$4 why
  if ((have_h5py)); then
    if ! why=$("$python" tests/check_pipeline_result.py "$out"); then
      not_ok "$name volumes" "$why"
      return
    fi
  else
    why="volumes not checked: h5py not available in .venv"
  fi
  ok "$name $what ($(verify_figure "$log")); $why"
}

run_case() {
  local ranks=$1 name=$2
  shift 2
  local out=$tmp/run.h5 log=$tmp/log
  rm -f "$out"
  run_verified "$name" 120 "$log" "$ranks" "$pipeline" "${tiny[@]}" "$@" --verify --out "$out" ||
    return
  local schedule=1f1b pp=$ranks dp=1 micro=4 why
  while (($#)); do
    case $1 in
      --schedule) schedule=$2 ;;
      --pp) pp=$2 ;;
      --dp) dp=$2 ;;
      --micro-batches) micro=$2 ;;
    esac
    shift
  done
  ((dp > 1 && pp == ranks)) && pp=$((ranks / dp))
  if ! why=$(check_activation_slots "$log" "$schedule" "$pp" "$micro"); then
    not_ok "$name activation memory" "$why"
    return
  fi
  # Rank 0's table: the C++ volumes (src/schemes/pipeline/pipeline_volumes.h) against its measured bytes.
  if grep -q DIFFERENT "$log" ||
      { grep -q "communication per iteration" "$log" && ! grep -q " equal$" "$log"; }; then
    not_ok "$name volume table" "$(grep -A4 'communication per iteration' "$log" | tr '\n' '|')"
    return
  fi
  pass_with_volumes "$name" "matches serial" "$out" "$log"
}

for p in 2 3 4; do
  for schedule in gpipe 1f1b; do
    for m in 1 "$p" $((2 * p)); do
      run_case "$p" "P=$p $schedule M=$m" --pp "$p" --schedule "$schedule" --micro-batches "$m"
    done
  done
done
# The schedules beyond 1F1B: interleaved (v = 2 chunks per rank), ZB-H1 and ZB-V (two chunks in
# a V) at P = 2, 3, 4 and M = P, 2P (8 blocks: P x 2 virtual stages need one each).
eight=(--layers 8)
for p in 2 3 4; do
  for m in "$p" $((2 * p)); do
    run_case "$p" "P=$p interleaved v=2 M=$m" "${eight[@]}" --pp "$p" --schedule interleaved \
      --virtual-stages 2 --micro-batches "$m"
    for schedule in zb-h1 zb-v; do
      run_case "$p" "P=$p $schedule M=$m" "${eight[@]}" --pp "$p" --schedule "$schedule" \
        --micro-batches "$m"
    done
  done
done
for schedule in "interleaved --virtual-stages 2" zb-h1 zb-v; do
  # shellcheck disable=SC2086
  run_case 4 "P=2 x D=2 ${schedule%% *} M=4" "${eight[@]}" --pp 2 --dp 2 --schedule $schedule \
    --micro-batches 4
  # shellcheck disable=SC2086
  run_case 4 "P=4 ${schedule%% *} M=4 --checkpoint-activations" "${eight[@]}" --pp 4 \
    --schedule $schedule --micro-batches 4 --checkpoint-activations
  # shellcheck disable=SC2086
  run_case 2 "P=2 ${schedule%% *} M=2 plain blocks --checkpoint-activations" "${eight[@]}" \
    --pp 2 --schedule $schedule --micro-batches 2 --block plain --checkpoint-activations
done
run_case 4 "P=2 x D=2 gpipe M=2" --pp 2 --dp 2 --schedule gpipe --micro-batches 2
run_case 4 "P=2 x D=2 1f1b M=4" --pp 2 --dp 2 --schedule 1f1b --micro-batches 4
run_case 4 "P=1 x D=4 (data parallel through the pipeline code) M=3" --dp 4 --micro-batches 3
run_case 3 "P=3 --partition 2,1,1, plain blocks" --pp 3 --partition 2,1,1 --block plain \
  --micro-batches 3
# Uneven replicas: 25 rows over D = 3 are 8, 8 and 9; M = 1 divides them all.
run_case 3 "P=1 x D=3, uneven replicas, sgd" --dp 3 --batch 25 --micro-batches 1 --optimizer sgd
# Activation checkpointing against serial (and the slots and volumes checks above).
run_case 4 "P=4 gpipe M=8 --checkpoint-activations" --pp 4 --schedule gpipe --micro-batches 8 \
  --checkpoint-activations
run_case 3 "P=3 --partition 2,1,1, plain blocks, --checkpoint-activations" --pp 3 \
  --partition 2,1,1 --block plain --micro-batches 3 --checkpoint-activations
run_case 4 "P=2 x D=2 1f1b M=2 --checkpoint-activations" --pp 2 --dp 2 --micro-batches 2 \
  --checkpoint-activations

# The same run with and without --checkpoint-activations: /train/loss bitwise equal, recompute
# timed only with it.
for precision in fp32 fp64; do
  for grid in "2 --pp 2" "4 --pp 4"; do
    for schedule in gpipe 1f1b; do
      read -r ranks args <<<"$grid"
      # shellcheck disable=SC2086
      compare_checkpointing "checkpointing bitwise, $precision, P=$ranks $schedule M=4" \
        same-losses 120 "$ranks" "$pipeline" "${tiny[@]}" $args --schedule "$schedule" \
        --micro-batches 4 --precision "$precision"
    done
  done
done
compare_checkpointing "checkpointing bitwise, fp32, P=2 plain blocks" same-losses 120 2 \
  "$pipeline" "${tiny[@]}" --pp 2 --block plain --micro-batches 3 --precision fp32

# Peak memory falls with checkpointing on every rank, where activations matter.
memory=(--hidden 64 --layers 4 --image-size 8 --ffn-mult 4 --batch 64 --iters 2 --warmup 1
        --print-every 0 --eval-samples 64 --precision fp64)
# (Not P=4 1f1b with 4 blocks: its last stage holds one micro-batch of one block, the same
# bytes as the one shared recompute set, so its peak can only stay equal.)
compare_checkpointing "checkpointing lowers peak memory, P=4 gpipe M=8" lower-peak 120 4 \
  "$pipeline" "${memory[@]}" --pp 4 --schedule gpipe --micro-batches 8
compare_checkpointing "checkpointing lowers peak memory, P=2 1f1b M=4" lower-peak 120 2 \
  "$pipeline" "${memory[@]}" --pp 2 --schedule 1f1b --micro-batches 4

# Inference: the forward-only stream against serial forward passes, its p2p volumes (activations
# forward only) and two micro-batches in flight per stage (one when M = 1).
inference_case() {
  local ranks=$1 name=$2 micro=$3
  shift 3
  local out=$tmp/inference.h5 log=$tmp/inference.log
  rm -f "$out"
  run_verified "$name" 120 "$log" "$ranks" "$pipeline" "${tiny[@]}" --inference \
    --micro-batches "$micro" "$@" --verify --out "$out" || return
  local want=$((micro < 2 ? micro : 2)) why
  if ! why=$(awk -v want="$want" '
      /^pipeline inference: / { table = 1; next }
      table && /^  [0-9]+ / { rows++; if ($NF + 0 != want) { printf "stage %d: %s in flight, not %d\n", $1, $NF, want; bad = 1 } }
      END { if (!rows) { print "no inference report"; bad = 1 }; exit bad }' "$log"); then
    not_ok "$name in flight" "$why"
    return
  fi
  pass_with_volumes "$name" "matches serial forward passes" "$out" "$log"
}
inference_case 2 "inference P=2 M=1" 1 --pp 2
inference_case 2 "inference P=2 M=4" 4 --pp 2
inference_case 3 "inference P=3 M=1" 1 --pp 3
inference_case 3 "inference P=3 M=3" 3 --pp 3
inference_case 4 "inference P=2 x D=2 M=2, --checkpoint-activations (no effect)" 2 --pp 2 --dp 2 \
  --checkpoint-activations
# Chunked schedules: each micro-batch through the rank's chunks in virtual-stage order.
inference_case 4 "inference P=4 interleaved v=2 M=4" 4 --layers 8 --pp 4 --schedule interleaved \
  --virtual-stages 2
inference_case 4 "inference P=4 zb-v M=4" 4 --layers 8 --pp 4 --schedule zb-v

# Evaluation after each epoch: a 48-sample IDX training split (2 epochs of 2 steps) and a
# 30-sample test split (evaluated in batches of 24 and 6 rows).
python3 - "$tmp/idx" <<'PY'
import os, struct, sys
d = sys.argv[1]
os.makedirs(d)
def write(name, magic, dims, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in dims) + bytes(data))
# Learnable: class y lights up every pixel whose index is y mod 10, over patterned noise.
for split, n, step in (("train", 48, 37), ("t10k", 30, 53)):
    labels = [(i * 3 + i // 5) % 10 for i in range(n)]
    pixels = [255 if p % 10 == labels[i] else (i * step + p) % 97 for i in range(n) for p in range(64)]
    write(f"{split}-images-idx3-ubyte", 0x803, (n, 8, 8), pixels)
    write(f"{split}-labels-idx1-ubyte", 0x801, (n,), labels)
PY
evaluation=(--hidden 12 --layers 4 --image-size 8 --ffn-mult 2 --batch 24 --epochs 2 --warmup 0
            --print-every 0 --precision fp64 --lr 0.02 --data "idx:$tmp/idx")
if timeout 60 mpiexec -n 1 "$serial" "${evaluation[@]}" --out "$tmp/serial.h5" >"$tmp/serial.log" 2>&1; then
  want=$(grep -o 'test accuracy [0-9.]*' "$tmp/serial.log" | tr '\n' ' ')
  for grid in "3 --pp 3 --micro-batches 2" "4 --pp 2 --dp 2 --schedule gpipe --micro-batches 4"; do
    read -r ranks args <<<"$grid"
    status=0
    # shellcheck disable=SC2086
    timeout 60 mpiexec -n "$ranks" "$pipeline" "${evaluation[@]}" $args --out "$tmp/eval.h5" \
      >"$tmp/eval.log" 2>&1 || status=$?
    if ((status != 0)); then
      not_ok "evaluation, $args" "exit status $status ($(tail -n 2 "$tmp/eval.log" | tr '\n' ' '))"
      continue
    fi
    got=$(grep -o 'test accuracy [0-9.]*' "$tmp/eval.log" | tr '\n' ' ')
    if [[ -n $want && $got == "$want" ]]; then
      ok "evaluation, $args: $got as serial"
    else
      not_ok "evaluation, $args" "'$got' where serial has '$want'"
    fi
  done
else
  not_ok "evaluation" "bin/serial failed: $(tail -n 2 "$tmp/serial.log" | tr '\n' ' ')"
fi

# Bad grids and splits: non-zero exit on every rank, one line per rank naming the problem.
# refused NAME RANKS PATTERN ARGS...: the tiny run with ARGS must be refused on every rank in
# one line naming PATTERN (the harness's expect_refusal).
refused() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  expect_refusal "$name" "$ranks" "$pattern" "$pipeline" "${tiny[@]}" "$@"
}
refused "--partition 1,1,1 (3 of the 4 blocks)" 3 "--partition '1,1,1'" --pp 3 --partition 1,1,1
refused "--partition 1,x,2" 3 "--partition '1,x,2'" --pp 3 --partition 1,x,2
refused "--partition 2,2 with --pp 3" 3 "--partition '2,2'" --pp 3 --partition 2,2
refused "--micro-batches 5 not dividing 24 rows" 2 "--micro-batches 5" --pp 2 --micro-batches 5
refused "--micro-batches 4 not dividing 6 rows per replica" 4 "--micro-batches 4" \
  --pp 2 --dp 2 --batch 12 --micro-batches 4
refused "--pp 4 with 2 blocks" 4 "--pp 4" --pp 4 --layers 2
refused "--pp 3 x --dp 2 on 4 ranks" 4 "--pp 3" --pp 3 --dp 2
refused "--schedule zigzag" 2 "--schedule" --schedule zigzag
refused "--virtual-stages 2 without interleaved" 2 "needs --schedule interleaved" --pp 2 \
  --virtual-stages 2
refused "interleaved with M = 3 on P = 2" 2 "a multiple of --pp 2" --pp 2 --schedule interleaved \
  --virtual-stages 2 --micro-batches 3
refused "zb-v on P = 4 with 4 blocks (8 virtual stages)" 4 "8 virtual stages" --pp 4 \
  --schedule zb-v

finish
