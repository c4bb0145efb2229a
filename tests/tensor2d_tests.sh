#!/usr/bin/env bash
# MPI tests of bin/tensor2d (2D SUMMA tensor parallelism) on the CPU backend: fp64 --verify
# against serial (losses and final weights within 1e-10 relative) on 1×1, 2×2 and 3×3 grids
# (9 ranks oversubscribed), on 2×2 × 2 replicas and 1×1 × 4 replicas, plus --block plain and
# fp32; then uneven blocks, where q divides neither the batch, S², H, F nor (at q = 3) the 10
# classes; every run's recorded bytes must equal the analytic formulas exactly on every rank
# (tests/check_tensor2d_volumes.py); weight memory per rank must be 1/q² of the model's and peak
# memory must fall with q. Grids that would leave a part of a split empty must fail on every
# rank with one line each, never hang (every run has a timeout). Ends with "N passed, N failed".
# TENSOR2D=path tests another build.
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

repo=$PWD
bin=${TENSOR2D:-bin/tensor2d}
python=$repo/.venv/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
passed=0
failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $1: $2"; failed=$((failed + 1)); }
have_h5py() { [[ -x $python ]] && "$python" -c 'import h5py' 2>/dev/null; }

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
# PASS checks the volumes.
run() {
  local name=$1 ranks=$2
  shift 2
  local -a base=("${tiny[@]}")
  ((${#model[@]} > 0)) && base=("${model[@]}")
  local out=$tmp/$ranks-$(echo "${base[*]} $*" | tr -c 'a-z0-9' '_').h5 log=$tmp/log
  if ! timeout 60 mpiexec -n "$ranks" "$bin" "${base[@]}" "$@" --verify --out "$out" \
      >"$log" 2>&1; then
    not_ok "$name" "exit status $? ($(tail -n 2 "$log" | tr '\n' ' '))"
    return 1
  fi
  if ! grep -q "^verify: PASS" "$log"; then
    not_ok "$name" "$(grep -E '^verify: (PASS|FAIL)' "$log" | tail -n 1)"
    return 1
  fi
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
  if have_h5py; then
    if why=$("$python" tests/check_tensor2d_volumes.py "$out"); then
      ok "$name volumes: $why"
    else
      not_ok "$name volumes" "$why"
    fi
  else
    echo "skip - $name volumes: h5py not available in .venv"
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
run "q=2 x dp=2 (8 ranks), fp64" 8 --tp-dims 2,2 --dp 2 --precision fp64
run "q=1 x dp=4 (4 ranks), fp64" 4 --tp-dims 1,1 --dp 4 --precision fp64
run "q=2, --block plain, fp64" 4 --tp-dims 2,2 --block plain --precision fp64
run "q=2, fp32" 4 --tp-dims 2,2 --precision fp32

model=("${uneven3[@]}")
run "uneven q=3 (9 ranks; S² 25, H 10, F 20, B 7), fp64" 9 --tp-dims 3,3 --precision fp64
model=("${uneven2[@]}")
run "uneven q=2 (4 ranks; S² 25, H 9, F 27, B 7), fp64" 4 --tp-dims 2,2 --precision fp64
run "uneven q=2 x dp=2 (8 ranks; B 9), fp64" 8 --tp-dims 2,2 --dp 2 --batch 9 --precision fp64
run "uneven q=2, --block plain, fp64" 4 --tp-dims 2,2 --block plain --precision fp64
run "uneven q=2, fp32" 4 --tp-dims 2,2 --precision fp32
model=()

# Memory: q = 2 divides every Linear, so each rank holds exactly 1/4 of the weights; with q = 3
# rank 0 holds 4 of the classifier's 10 rows, yet its blocks still shrink; the peak falls with q.
if [[ -n ${weights[1]:-} && -n ${weights[2]:-} && -n ${weights[3]:-} ]]; then
  if ((weights[2] * 4 == weights[1] && weights[3] < weights[2])); then
    ok "weight bytes per rank ${weights[1]} / ${weights[2]} / ${weights[3]} at q = 1 / 2 / 3"
  else
    not_ok "weight bytes per rank" "${weights[1]} / ${weights[2]} / ${weights[3]} at q = 1 / 2 / 3"
  fi
  if have_h5py; then
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
expect_refusal() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  local status=0
  timeout 60 mpiexec -n "$ranks" "$bin" "${tiny[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  local lines
  lines=$(grep -c . "$tmp/err")
  if ((status == 0 || status == 124)); then
    not_ok "$name" "exit status $status"
  elif [[ $lines -ne $ranks ]] || [[ $(grep -c -- "$pattern" "$tmp/err") -ne $ranks ]]; then
    not_ok "$name" "expected $ranks lines naming '$pattern', got: $(tr '\n' '|' <"$tmp/err")"
  else
    ok "$name is refused on every rank"
  fi
}
expect_refusal "--tp-dims 2,3" 4 "must be square" --tp-dims 2,3
expect_refusal "--tp-dims 3,3 on 4 ranks" 4 "--tp-dims 3,3" --tp-dims 3,3
expect_refusal "--dp 3 with a 2x2 grid on 8 ranks" 8 "--dp 3" --tp-dims 2,2 --dp 3
# Uneven splits are fine, empty parts are not.
expect_refusal "--hidden 2 on a 3x3 grid" 9 "--hidden 2" --tp-dims 3,3 --hidden 2
expect_refusal "--image-size 1 on a 2x2 grid" 4 "--image-size 1" --tp-dims 2,2 --image-size 1
expect_refusal "--batch 3 over 2 replicas of a 2x2 grid" 8 "--batch 3" --tp-dims 2,2 --dp 2 \
  --batch 3

echo "$passed passed, $failed failed"
((failed == 0))
