#!/usr/bin/env bash
# A steady-state step asks nothing of the device but its work: every scheme (serial, data ZeRO
# 0-3, each pipeline schedule, tensor1d with and without sequence parallelism, tensor2d, tensor3d)
# in fp32 and bf16 records 0 allocations and 0 frees in every timed step (/counters, after the
# warm-up step) on the CPU build; on the emulated GPU build (--device cuda), also 0 of the
# runtime's own allocations and frees, and host synchronisations at most the step's closing one
# (two with fp16, whose optimizer reads its non-finite count once a step). Over NCCL, the GPU's
# default; ZB-V with more micro-batches than stages needs --comm mpi, which stages every
# transfer through host memory: its synchronisations are counted and shown as a skip.
# Usage: bash tests/step_counts_tests.sh [BIN_DIR...] (default: bin, and bin/emulate when built).
# Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

bins=("$@")
if ((${#bins[@]} == 0)); then
  bins=(bin)
  if [[ -x bin/emulate/serial ]]; then
    bins+=(bin/emulate)
  else
    skip "emulated GPU build" "bin/emulate not built (make CUDA=emulate HIP_CPU_HOME=...)"
  fi
fi
if ((have_h5py == 0)); then
  skip "step counts" "no python with h5py to read the result files"
  finish
fi

tiny=(--hidden 24 --image-size 6 --ffn-mult 2 --batch 16 --iters 4 --warmup 1 --print-every 0
      --eval-samples 16)
n=0

# counts_hold NAME BIN RANKS EXE ARGS...: the run's timed steps allocate and free nothing; where
# the runtime counts (the emulated build), it is asked for no allocation or free either, and at
# most one host synchronisation a step (two with fp16; --comm mpi: counted, skipped).
counts_hold() {
  local name=$1 bin=$2 ranks=$3 exe=$4
  shift 4
  n=$((n + 1))
  local out=$tmp/run-$n.h5 log=$tmp/log-$n device=cpu syncs=1
  [[ $bin == */emulate ]] && device=cuda
  [[ " $* " == *" --precision fp16 "* ]] && syncs=2
  [[ " $* " == *" --comm mpi "* ]] && syncs=-1
  if ! timeout 300 mpiexec -n "$ranks" "$bin/$exe" "${tiny[@]}" --device "$device" "$@" \
      --out "$out" >"$log" 2>&1; then
    not_ok "$name" "the run failed: $(tail -n 2 "$log" | tr '\n' '|')"
    return
  fi
  local verdict
  verdict=$("$python" - "$out" "$syncs" "$device" <<'PY'
import sys, h5py
path, syncs_allowed, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with h5py.File(path, "r") as f:
    warmup = int(f.attrs["warmup_iterations"])
    counters = {name: f["counters"][name][warmup:] for name in f["counters"]}
bad = []
for name in ("allocations", "frees", "runtime_allocations", "runtime_frees"):
    if name in counters and counters[name].max() > 0:
        bad.append(f"{name} up to {int(counters[name].max())} a step")
text = f"0 allocations and frees in {counters['allocations'].shape[0]} timed steps"
if "host_syncs" in counters:
    most = int(counters["host_syncs"].max())
    if syncs_allowed < 0:
        print(f"SKIPSYNC {most}")
    elif most > syncs_allowed:
        bad.append(f"{most} host syncs a step (at most {syncs_allowed})")
    text += f", at most {most} host sync(s) and {int(counters['launches'].max())} launches a step"
elif device == "cuda":
    bad.append("no runtime counts in an emulated GPU run")
print("; ".join(bad) if bad else text)
sys.exit(1 if bad else 0)
PY
)
  if (($? == 0)); then
    if [[ $verdict == SKIPSYNC* ]]; then
      local most=${verdict%%$'\n'*}
      ok "$name: ${verdict#*$'\n'}"
      skip "$name: host synchronisations" "${most#SKIPSYNC } a step, not held to 1: --comm mpi\
 copies every transfer of device memory through the host"
    else
      ok "$name: $verdict"
    fi
  else
    not_ok "$name" "$verdict"
  fi
}

for bin in "${bins[@]}"; do
  for precision in fp32 bf16; do
    at="$bin, $precision"
    p=(--precision "$precision")
    counts_hold "serial ($at)" "$bin" 1 serial --layers 2 "${p[@]}"
    for zero in 0 1 2 3; do
      counts_hold "data --zero $zero ($at)" "$bin" 2 data --layers 2 --zero "$zero" "${p[@]}"
    done
    for schedule in gpipe 1f1b "interleaved --virtual-stages 2" zb-h1; do
      # shellcheck disable=SC2086 # the schedule and its own options
      counts_hold "pipeline --schedule $schedule ($at)" "$bin" 2 pipeline --layers 4 \
        --schedule $schedule --micro-batches 4 "${p[@]}"
    done
    counts_hold "pipeline --schedule zb-v ($at)" "$bin" 2 pipeline --layers 4 --schedule zb-v \
      --micro-batches 2 "${p[@]}"
    counts_hold "pipeline --schedule zb-v --micro-batches 4 ($at)" "$bin" 2 pipeline --layers 4 \
      --schedule zb-v --micro-batches 4 --comm mpi "${p[@]}"
    counts_hold "tensor1d ($at)" "$bin" 2 tensor1d --layers 2 "${p[@]}"
    counts_hold "tensor1d --sequence-parallel ($at)" "$bin" 2 tensor1d --layers 2 \
      --sequence-parallel "${p[@]}"
    counts_hold "tensor2d 2x2 ($at)" "$bin" 4 tensor2d --layers 2 "${p[@]}"
    counts_hold "tensor3d 2,1,2 ($at)" "$bin" 4 tensor3d --layers 2 --tp-dims 2,1,2 "${p[@]}"
  done
  # fp16's loss scaling: its one extra synchronisation a step (the optimizer's non-finite count).
  counts_hold "data --zero 3 ($bin, fp16)" "$bin" 2 data --layers 2 --zero 3 --precision fp16
done
finish
