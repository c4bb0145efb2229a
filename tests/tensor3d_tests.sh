#!/usr/bin/env bash
# MPI tests of bin/tensor3d (AxoNN 3D tensor parallelism × data) on the CPU backend, fp64:
# - --verify against serial (losses and final weights within 1e-10 relative) on [1,1,1] and on
#   [2,1,1] [1,2,1] [1,1,2] [2,2,1] [2,1,2] [1,2,2] [2,2,2] and [2,2,1] × dp 2 (8 ranks
#   oversubscribed) with every overlap flag off and with all four on; each flag on its own at
#   [2,2,2] and [2,2,1] × dp 2; [1,1,4] with the ping-pong scratch flags; --block plain;
# - every run's recorded bytes per collective kind, group, rank and iteration equal the
#   analytic volumes, from the program (stdout) and recomputed from the HDF5 file
#   (tests/check_tensor3d_volumes.py); the expected groups appear; --cache-weights halves the
#   depth all-gather;
# - peak memory minus the depth scratch the flags call for is the same with every flag set
#   (the gathered-W and dW scratch are shared across layers);
# - cross-scheme volumes: [G,1,1] equals bin/tensor1d --tp G and [1,1,G]'s all-gather and
#   reduce-scatter equal bin/data --zero 3, once the stated embed/LayerNorm/classifier
#   differences are taken out (G = 2, 4);
# - --checkpoint-activations, fp32 and fp64, at [2,2,1], [1,1,2] and [2,1,2] with every overlap
#   flag (plus plain blocks with prefetched weights, and [1,1,4] with the ping-pong scratch, in
#   fp64): --verify passes, the volumes (with the recompute's) equal the formulas, /train/loss is
#   bitwise equal to the run without it, and only it records recompute time, on every rank;
# - --inference --verify (fp64) at [2,2,1], [1,1,2] and [2,2,1] × dp 2: the batch losses match
#   serial forward passes and the forward-only volumes equal the formulas; the checker rejects
#   an inference file labelled a training run and a checkpointed one labelled not;
# - checkpointing lowers the peak memory on every rank at [2,2,1] (H = 64, batch 64, 4 blocks);
# - grids the model does not divide fail on every rank with one line each and exit 2.
# Ends with "N passed, N failed". TENSOR3D=path tests another build.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

bin=${TENSOR3D:-bin/tensor3d}
if ! "$python" -c 'import h5py, numpy' 2>/dev/null; then
  not_ok "python" "$python with h5py and numpy is needed for the HDF5 checks"
  finish
fi

# S² = 36, H = 12, F = 24, B = 12 divide by 2 and 4 (B by dp·z = 4); the classifier's 10
# outputs are padded to 3 × 4 on a group of 4.
tiny=(--hidden 12 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 3 --warmup 1
      --print-every 0 --eval-samples 12 --precision fp64)
all=(--cache-weights --overlap-dx --defer-dw-reduce --prefetch-weights)

ranks_of() {  # x,y,z [dp] -> x·y·z·dp
  local IFS=,
  read -r x y z <<<"$1"
  echo $((x * y * z * ${2:-1}))
}
h5_of() { echo "$tmp/$(tr -c 'A-Za-z0-9' _ <<<"$1").h5"; }  # a run's result file

# run NAME DIMS DP ARGS...: trains with --verify into $(h5_of NAME); checks PASS, the printed
# and the HDF5 volumes; keeps the log as last.log.
run() {
  local name=$1 dims=$2 dp=$3
  shift 3
  local ranks log=$tmp/log out why figure status=0
  ranks=$(ranks_of "$dims" "$dp")
  out=$(h5_of "$name")
  timeout 60 mpiexec -n "$ranks" "$bin" "${tiny[@]}" --tp-dims "$dims" --dp "$dp" "$@" \
    --verify --out "$out" >"$log" 2>&1 || status=$?
  if ((status != 0)); then
    not_ok "$name" "exit status $status ($(tail -n 2 "$log" | tr '\n' ' '))"
    return 1
  fi
  cp "$log" "$tmp/last.log"
  cp "$log" "${out%.h5}.log"
  if ! grep -q "^verify: PASS" "$log"; then
    not_ok "$name" "$(grep 'verify:' "$log" | tail -n 1)"
    return 1
  fi
  figure=$(grep -m1 '^verify: PASS' "$log" | grep -o 'relative error [^ ,]*')
  if [[ -z $figure ]]; then
    not_ok "$name" "the verify line names no error figure: $(grep -m1 '^verify: PASS' "$log")"
    return 1
  fi
  if ! grep -q "volumes: analytic == measured" "$log"; then
    not_ok "$name volumes" "$(grep -E 'DIFFERENT' "$log" | tr -s ' ' | tr '\n' ';')"
    return 1
  fi
  if ! why=$("$python" tests/check_tensor3d_volumes.py "$out"); then
    not_ok "$name HDF5 volumes" "$why"
    return 1
  fi
  ok "$name matches serial ($figure); printed and HDF5 volumes equal the formulas"
}

# measured BYTES of a collective kind in the last run's table ("" when absent).
measured() { awk -v k="$1" '$1 == k && $NF == "equal" {print $3}' "$tmp/last.log"; }

# expect_kinds NAME KIND...: each kind was measured with nonzero bytes.
expect_kinds() {
  local name=$1 missing=""
  shift
  for k in "$@"; do
    local b
    b=$(measured "$k")
    [[ -n $b && $b != 0 ]] || missing+=" $k"
  done
  if [[ -z $missing ]]; then ok "$name records $*"; else not_ok "$name groups" "missing$missing"; fi
}

# check NAME ARGS...: tests/check_tensor3d_volumes.py ARGS must pass.
check() {
  local name=$1
  shift
  expect_output "$name" "$python" tests/check_tensor3d_volumes.py "$@"
}

run "[1,1,1]" 1,1,1 1
run "[2,1,1]" 2,1,1 1 && expect_kinds "[2,1,1]" allreduce:outer allgather:outer
run "[1,2,1]" 1,2,1 1 && expect_kinds "[1,2,1]" allreduce:inner allgather:inner
run "[1,1,2]" 1,1,2 1 && expect_kinds "[1,1,2]" allgather:depth reduce_scatter:depth allreduce:depth
run "[2,2,1]" 2,2,1 1
run "[1,2,2]" 1,2,2 1
run "[2,1,2]" 2,1,2 1
run "[2,2,2]" 2,2,2 1 && expect_kinds "[2,2,2]" allreduce:inner allreduce:outer \
  allgather:depth reduce_scatter:depth allreduce:depth
gather_plain=$(measured allgather:depth)
run "[2,2,1] x dp 2" 2,2,1 2 && expect_kinds "[2,2,1] x dp 2" allreduce:data

# Every overlap flag on at each grid of the issue; each flag on its own at the 8-rank grids.
for dims in 2,1,1 1,2,1 1,1,2 2,2,1 2,1,2 1,2,2 2,2,2; do
  run "[$dims] every overlap flag" "$dims" 1 "${all[@]}"
done
run "[2,2,1] x dp 2 every overlap flag" 2,2,1 2 "${all[@]}"
for flag in "${all[@]}"; do
  run "[2,2,2] $flag" 2,2,2 1 "$flag"
  if [[ $flag == --cache-weights ]]; then
    cached=$(measured allgather:depth)
    if [[ -n $gather_plain && -n $cached ]] && (( gather_plain == 2 * cached )); then
      ok "--cache-weights halves allgather:depth ($gather_plain -> $cached B)"
    else
      not_ok "--cache-weights volume" "allgather:depth $gather_plain -> $cached B"
    fi
  fi
  run "[2,2,1] x dp 2 $flag" 2,2,1 2 "$flag"
done
# Depth 4, six Linears: the shared gathered-W and dW buffers alternate between layers.
run "[1,1,4]" 1,1,4 1
run "[1,1,4] prefetch + deferred dW + overlapped dX" 1,1,4 1 --prefetch-weights \
  --defer-dw-reduce --overlap-dx
run "[4,1,1]" 4,1,1 1  # the classifier padded to 3 x 4 outputs
run "[1,4,1] --block plain, 3 layers (classifier padded)" 1,4,1 1 --block plain --layers 3
run "[2,1,2] --block plain, 3 layers" 2,1,2 1 --block plain --layers 3
run "[1,2,2] --block plain, 3 layers, every overlap flag" 1,2,2 1 --block plain --layers 3 \
  "${all[@]}"

# Memory: only the depth scratch depends on the flags, by exactly the shared-buffer formula.
runs222=("$(h5_of "[2,2,2]")" "$(h5_of "[2,2,2] every overlap flag")")
for flag in "${all[@]}"; do runs222+=("$(h5_of "[2,2,2] $flag")"); done
check "[2,2,2] memory" memory "${runs222[@]}"
check "[1,1,4] memory" memory "$(h5_of "[1,1,4]")" \
  "$(h5_of "[1,1,4] prefetch + deferred dW + overlapped dX")"

# Cross-scheme volumes on the same model (no --verify: only the bytes are compared).
other() {  # other OUT RANKS PROGRAM ARGS...: a run of another scheme; fails loudly
  local out=$1 ranks=$2 program=$3 status=0
  shift 3
  timeout 60 mpiexec -n "$ranks" "$program" "${tiny[@]}" "$@" --out "$out" \
    >"$tmp/other.log" 2>&1 || status=$?
  if ((status != 0)); then
    not_ok "$program $*" "exit status $status ($(tail -n 2 "$tmp/other.log" | tr '\n' ' '))"
    return 1
  fi
}
for g in 2 4; do
  other "$tmp/tensor1d-$g.h5" "$g" bin/tensor1d --tp "$g" &&
    check "[$g,1,1] vs tensor1d --tp $g" vs-tensor1d "$(h5_of "[$g,1,1]")" "$tmp/tensor1d-$g.h5"
  other "$tmp/zero3-$g.h5" "$g" bin/data --zero 3 &&
    check "[1,1,$g] vs data --zero 3" vs-zero3 "$(h5_of "[1,1,$g]")" "$tmp/zero3-$g.h5"
done

# Activation checkpointing: the same run without and with it, each passing run's checks.
# checkpointing NAME DIMS DP ARGS...
checkpointing() {
  local name=$1 dims=$2 dp=$3 why
  shift 3
  local full=$name checkpointed="$name --checkpoint-activations"
  run "$full" "$dims" "$dp" "$@" || return 1
  run "$checkpointed" "$dims" "$dp" "$@" --checkpoint-activations || return 1
  local a b
  a=$(h5_of "$full")
  b=$(h5_of "$checkpointed")
  if ! why=$("$python" tests/check_checkpointing.py same-losses "$a" "$b" 2>&1); then
    not_ok "$name: checkpointing bitwise" "$why"
    return 1
  fi
  # The verdict's worst item (losses and final weights vs serial) is the same to the digit.
  if [[ $(grep -m1 -E '^verify: (PASS|FAIL)' "${a%.h5}.log") != $(grep -m1 -E '^verify: (PASS|FAIL)' "${b%.h5}.log") ]]; then
    not_ok "$name: checkpointing bitwise" "verify lines differ: $(grep -h -m1 -E '^verify: (PASS|FAIL)' \
      "${a%.h5}.log" "${b%.h5}.log" | tr '\n' ' ')"
    return 1
  fi
  ok "$name: --checkpoint-activations bitwise ($why)"
}
for precision in fp32 fp64; do
  checkpointing "ckpt $precision [2,2,1]" 2,2,1 1 --precision "$precision"
  checkpointing "ckpt $precision [1,1,2]" 1,1,2 1 --precision "$precision"
  checkpointing "ckpt $precision [2,1,2] every overlap flag" 2,1,2 1 --precision "$precision" \
    "${all[@]}"
done
checkpointing "ckpt [2,1,2] --block plain, 3 layers, prefetch" 2,1,2 1 --block plain \
  --layers 3 --prefetch-weights
checkpointing "ckpt [1,1,4] prefetch + deferred dW" 1,1,4 1 --prefetch-weights \
  --defer-dw-reduce

# Inference: forward passes only, against serial ones; the volumes of a forward pass.
run "[2,2,1] --inference" 2,2,1 1 --inference
run "[1,1,2] --inference" 1,1,2 1 --inference
run "[2,2,1] x dp 2 --inference" 2,2,1 2 --inference

# The checker tells the modes apart: relabelled files must fail it.
relabel() {  # relabel IN OUT PYTHON: copies IN to OUT, then runs PYTHON on its attributes `a`
  cp "$1" "$2" &&
    "$python" -c "import h5py, json, sys; a = h5py.File(sys.argv[1], 'r+').attrs; $3" "$2"
}
for spec in "inference:[2,2,1] --inference:a['mode'] = 'train'" \
  "checkpointing:ckpt fp64 [1,1,2] --checkpoint-activations:c = json.loads(a['config_json']); \
c['checkpoint-activations'] = False; a['config_json'] = json.dumps(c)"; do
  IFS=: read -r what source edit <<<"$spec"
  if ! relabel "$(h5_of "$source")" "$tmp/relabelled.h5" "$edit"; then
    not_ok "checker on a relabelled $what file" "cannot relabel $(h5_of "$source")"
  elif why=$("$python" tests/check_tensor3d_volumes.py "$tmp/relabelled.h5"); then
    not_ok "checker on a relabelled $what file" "passed: $why"
  else
    ok "checker rejects a relabelled $what file (${why:0:90}...)"
  fi
done

# Checkpointing lowers the peak memory on every rank where activations matter.
memory_args=(--hidden 64 --layers 4 --batch 64 --image-size 8 --ffn-mult 4 --eval-samples 64)
compare_checkpointing "[2,2,1] H 64 batch 64: --checkpoint-activations lowers the peak" \
  lower-peak 60 4 "$bin" "${tiny[@]}" "${memory_args[@]}" --tp-dims 2,2,1

# bad NAME RANKS PATTERN ARGS...: every rank prints one error line naming the problem; exit 2.
bad() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  local log=$tmp/bad.log status=0
  timeout 30 mpiexec -n "$ranks" "$bin" "${tiny[@]}" "$@" --out "$tmp/bad.h5" >"$log" 2>&1 ||
    status=$?
  local lines
  lines=$(grep -c "error: .*$pattern" "$log")
  if [[ $status == 2 && $lines == "$ranks" ]]; then
    ok "$name: exit 2, one line per rank ($(grep -m1 'error:' "$log" | sed 's/.*error: //'))"
  else
    not_ok "$name" "exit $status, $lines of $ranks ranks said '$pattern': $(head -c 300 "$log")"
  fi
}
bad "product != ranks" 4 "not a multiple" --tp-dims 2,2,2
bad "dp product != ranks" 4 "needs x·y·z·dp" --tp-dims 2,1,1 --dp 3
bad "S² not divisible by x" 2 "is not divisible by x = 2" --tp-dims 2,1,1 --image-size 5
bad "H not divisible" 4 "is not divisible by 4" --tp-dims 1,4,1 --hidden 10
bad "batch not divisible by dp·z" 2 "not divisible by dp·z" --tp-dims 1,1,2 --batch 13
bad "weight block not divisible by z" 4 "depth shards" --tp-dims 1,1,4 --hidden 6 \
  --image-size 3 --ffn-mult 1
bad "malformed --tp-dims" 2 "expected three positive integers" --tp-dims 2,x

finish
