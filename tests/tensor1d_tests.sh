#!/usr/bin/env bash
# MPI equivalence tests of bin/tensor1d on the CPU backend in fp64: Megatron tensor parallelism
# at T = 2, 3, 4 (non-power-of-two included), hybrid T = 2 × D = 2 (even and uneven replica
# batches), plain column/row block pairs and a replicated embed must match serial (--verify:
# losses and final weights within 1e-10 relative), keep replicated tensors identical on every tp
# rank, and record exactly the analytic bytes per collective and rank
# (tests/check_tensor1d.py volumes). Peak memory per rank must fall as 1/T
# (tests/check_tensor1d.py memory). --checkpoint-activations must pass --verify, record the
# recompute's extra all-reduces exactly, give bitwise the losses of the same run without it (fp32
# and fp64, T = 2 and T = 2 x D = 2) and lower the peak memory on every rank; --inference must
# pass --verify against serial forward passes with the forward collectives alone.
# --sequence-parallel must pass --verify (T = 2, 3, 4, T = 2 x D = 2, checkpointing, inference),
# record the analytic bytes and lower the peak memory at T = 2 and 4. Bad grids and
# splits must fail on every rank with one line each, never hang (every run has a timeout).
# Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

# F = 2·24 = 48 and S² = 36 divide by 2, 3 and 4; the 10 classes by 2 only.
tiny=(--hidden 24 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 4 --warmup 1
      --print-every 0 --eval-samples 24 --precision fp64)

run_case() {
  local name=$1 ranks=$2
  shift 2
  local out=$tmp/case.h5 log=$tmp/log
  run_verified "$name" 60 "$log" "$ranks" bin/tensor1d "${tiny[@]}" "$@" --verify --out "$out" ||
    return
  ok "$name matches serial ($(verify_figure "$log"))"
  if [[ " $* " == *" --inference "* ]]; then
    : # no weights are gathered: nothing to compare between tp ranks
  elif grep -q "replicated tensors: identical on all" "$log"; then
    ok "$name: replicated tensors identical on every tp rank"
  else
    not_ok "$name replicated tensors" "$(grep 'replicated tensors' "$log" || echo 'no report')"
  fi
  if grep -q "DIFFERENT" "$log" || ! grep -q "equal" "$log"; then
    not_ok "$name printed volumes" "$(grep -A6 'communication per iteration' "$log" | tr '\n' '|')"
  else
    ok "$name: printed analytic bytes and calls equal the measured ones"
  fi
  if ((have_h5py)); then
    expect_output "$name volumes" "$python" tests/check_tensor1d.py volumes "$out"
  else
    skip "$name volumes" "h5py not available in .venv"
  fi
}

run_case "tp 2" 2 --tp 2
run_case "tp 3" 3 --tp 3
run_case "tp 4" 4 --tp 4
run_case "tp 2 x dp 2" 4 --tp 2 --dp 2
run_case "tp 2 x dp 2, uneven replica batches" 4 --tp 2 --dp 2 --batch 13
run_case "tp 2, plain blocks (a column/row pair and a replicated block)" 2 --tp 2 --block plain --layers 3
run_case "tp 4, replicated embed (S² = 25)" 4 --tp 4 --image-size 5
run_case "tp 2, --ffn-hidden 50 (F no multiple of H)" 2 --tp 2 --ffn-hidden 50
run_case "tp 2 --checkpoint-activations" 2 --tp 2 --checkpoint-activations
run_case "tp 2 x dp 2 --checkpoint-activations" 4 --tp 2 --dp 2 --checkpoint-activations
run_case "tp 2, plain blocks, --checkpoint-activations" 2 --tp 2 --block plain --layers 3 \
  --checkpoint-activations
run_case "tp 2 --inference" 2 --tp 2 --inference
run_case "tp 3 --inference" 3 --tp 3 --inference
run_case "tp 2 x dp 2 --inference" 4 --tp 2 --dp 2 --inference

# The same run with and without --checkpoint-activations: /train/loss bitwise equal, recompute
# timed only with it; then peak memory lower with it on every rank.
for precision in fp32 fp64; do
  compare_checkpointing "checkpointing bitwise, $precision, tp 2" same-losses 60 2 bin/tensor1d \
    "${tiny[@]}" --tp 2 --precision "$precision"
  compare_checkpointing "checkpointing bitwise, $precision, tp 2 x dp 2" same-losses 60 4 \
    bin/tensor1d "${tiny[@]}" --tp 2 --dp 2 --precision "$precision"
done
compare_checkpointing "checkpointing lowers peak memory, tp 2" lower-peak 60 2 bin/tensor1d \
  --hidden 64 --layers 4 --image-size 8 --ffn-mult 4 --batch 64 --iters 2 --warmup 1 \
  --print-every 0 --eval-samples 64 --precision fp64 --tp 2

# Peak memory per rank at a size where parameters and Adam state dominate.
if ((have_h5py)); then
  files=()
  status=0
  for tp in 1 2 4; do
    timeout 60 mpiexec -n $tp bin/tensor1d --hidden 256 --layers 2 --image-size 16 --ffn-mult 4 \
      --batch 8 --iters 2 --warmup 1 --print-every 0 --precision fp64 --tp $tp \
      --out "$tmp/memory-$tp.h5" >"$tmp/log" 2>&1 || status=$?
    files+=("$tmp/memory-$tp.h5")
  done
  if ((status != 0)); then
    not_ok "peak memory runs" "exit status $status ($(tail -n 2 "$tmp/log" | tr '\n' ' '))"
  else
    expect_output "peak memory" "$python" tests/check_tensor1d.py memory "${files[@]}"
  fi
else
  skip "peak memory" "h5py not available in .venv"
fi

# Sequence parallelism: the same checks (run_case), volumes by docs/tensor1d.md's sequence-parallel
# formulas; the short last evaluation batch (22 = 12 + 10 samples, 10 rows over T = 4) is padded.
run_case "sequence parallel, tp 2" 2 --tp 2 --sequence-parallel
run_case "sequence parallel, tp 3" 3 --tp 3 --sequence-parallel
run_case "sequence parallel, tp 4, replicated classifier, padded evaluation batch" 4 --tp 4 \
  --eval-samples 22 --sequence-parallel
run_case "sequence parallel, tp 4, replicated embed (S² = 25)" 4 --tp 4 --image-size 5 \
  --sequence-parallel
run_case "sequence parallel, tp 2 x dp 2" 4 --tp 2 --dp 2 --sequence-parallel
run_case "sequence parallel, tp 2 --checkpoint-activations" 2 --tp 2 --checkpoint-activations \
  --sequence-parallel
run_case "sequence parallel, tp 2 --inference" 2 --tp 2 --inference --sequence-parallel

# The padded evaluation batch changes no prediction: 2 epochs of a 48-sample IDX set with 22 test
# samples (a last batch of 10 rows over T = 4) give plain tensor1d's accuracies.
idx=$tmp/idx
if [[ -x $python ]] && "$python" tests/make_idx.py "$idx" 48 22 >/dev/null; then
  for sp in "" --sequence-parallel; do
    # shellcheck disable=SC2086
    timeout 60 mpiexec -n 4 bin/tensor1d "${tiny[@]}" --iters 0 --epochs 2 --data "idx:$idx" \
      --tp 4 --eval-samples 22 $sp >"$tmp/accuracy$sp" 2>&1
  done
  plain=$(grep "test accuracy" "$tmp/accuracy" | tr '\n' ' ')
  if [[ -n $plain && $plain == "$(grep "test accuracy" "$tmp/accuracy--sequence-parallel" |
      tr '\n' ' ')" ]]; then
    ok "sequence parallel, padded evaluation batch: accuracies equal plain tensor1d's ($plain)"
  else
    not_ok "sequence parallel, padded evaluation batch" \
      "$(tail -n 2 "$tmp/accuracy--sequence-parallel" | tr '\n' ' ') vs ${plain:-no plain run}"
  fi
fi

# Sequence parallelism lowers every rank's peak memory at the same T (LayerNorm inputs, block
# outputs and activation gradients hold R/T rows).
largest_peak='import h5py, sys; print(int(max(h5py.File(sys.argv[1])["memory/peak_bytes"][:])))'
if ((have_h5py)); then
  for tp in 2 4; do
    peaks=()
    for sp in "" --sequence-parallel; do
      timeout 60 mpiexec -n $tp bin/tensor1d --hidden 64 --layers 4 --image-size 8 --ffn-mult 4 \
        --batch 64 --iters 2 --warmup 1 --print-every 0 --eval-samples 64 --precision fp64 \
        --tp $tp $sp --out "$tmp/sp-memory.h5" >"$tmp/log" 2>&1 || break
      peaks+=("$("$python" -c "$largest_peak" "$tmp/sp-memory.h5")")
    done
    if ((${#peaks[@]} == 2)) && ((peaks[1] < peaks[0])); then
      ok "sequence parallel lowers peak memory at tp $tp: ${peaks[0]} -> ${peaks[1]} bytes"
    else
      not_ok "sequence parallel peak memory at tp $tp" "peaks ${peaks[*]:-none}"
    fi
  done
else
  skip "sequence parallel peak memory" "h5py not available in .venv"
fi

# Bad grids and splits: non-zero exit on every rank, one line per rank naming the problem.
# refused NAME RANKS PATTERN ARGS...: the tiny run with ARGS must be refused on every rank in
# one line naming PATTERN (the harness's expect_refusal).
refused() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  expect_refusal "$name" "$ranks" "$pattern" bin/tensor1d "${tiny[@]}" "$@"
}
refused "--tp 3 with FFN width 32" 3 "does not divide the FFN width 32" --tp 3 --hidden 16
refused "--tp 3 with plain blocks of width 16" 3 "does not divide the hidden width 16" \
  --tp 3 --hidden 16 --block plain
refused "--tp 2 x --dp 3 on 4 ranks" 4 "--tp 2 x --dp 3 = 6 does not match the 4 ranks" \
  --tp 2 --dp 3
refused "--tp 2 on 3 ranks" 3 "--tp 2 does not divide the 3 ranks" --tp 2
refused "--batch 3 over 4 replicas" 4 "--batch 3" --tp 1 --dp 4 --batch 3
refused "--sequence-parallel with plain blocks" 2 "needs residual blocks" --tp 2 \
  --block plain --sequence-parallel
refused "--sequence-parallel, --tp 4 and width 18" 4 "does not divide the hidden width 18" \
  --tp 4 --hidden 18 --ffn-mult 2 --sequence-parallel
refused "--sequence-parallel, 13 rows over 2 replicas" 4 "gives replica 1 7 rows" --tp 2 \
  --dp 2 --batch 13 --sequence-parallel

finish
