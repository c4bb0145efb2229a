#!/usr/bin/env bash
# MPI equivalence tests of bin/data on the CPU backend in fp64: for 1-4 ranks (oversubscribed),
# DDP with and without overlap and ZeRO 1, 2 and 3 must match serial (--verify: losses and final
# weights within 1e-10 relative), and each iteration's recorded bytes must equal the analytic
# volumes (tests/check_comm_volumes.py, and rank 0's closing table of the C++ ones); so must
# ZeRO-3's hybrid sharding on 4 ranks in groups of 1, 2 and 4. Bad grids must fail on every rank with one line each, never hang (every run has a
# timeout). Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

# 4 KiB buckets (512 doubles) so the tiny model spans several buckets.
bucket_mb=0.00390625
bucket_elements=512
tiny=(--hidden 24 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 4 --warmup 1
      --print-every 0 --eval-samples 24 --precision fp64 --bucket-mb $bucket_mb)

# expect_volume_table NAME LOG: rank 0's closing table (src/schemes/data/data_volumes.h)
# found every collective's measured bytes equal to the analytic ones.
expect_volume_table() {
  if grep -q "DIFFERENT" "$2" || ! grep -q " equal$" "$2"; then
    not_ok "$1 printed volumes" "$(grep -A6 'communication per iteration' "$2" | tr '\n' '|')"
  else
    ok "$1: printed analytic volumes equal the measured ones"
  fi
}

for ranks in 1 2 3 4; do
  for variant in "0" "0 --no-overlap" "1" "2" "3" "3 --no-overlap"; do
    read -r zero extra <<<"$variant"
    name="$ranks ranks, zero $zero${extra:+ $extra}"
    out=$tmp/run-$ranks-$zero${extra:+-no-overlap}.h5
    log=$tmp/log
    # shellcheck disable=SC2086
    run_verified "$name" 120 "$log" "$ranks" bin/data "${tiny[@]}" --zero "$zero" $extra \
      --verify --out "$out" || continue
    ok "$name matches serial ($(verify_figure "$log"))"
    expect_volume_table "$name" "$log"
    if ((have_h5py)); then
      expect_output "$name volumes" \
        "$python" tests/check_comm_volumes.py "$out" "$zero" "$ranks" "$bucket_elements"
    else
      skip "$name volumes" "h5py not available in .venv"
    fi
  done
done

# Hybrid sharding on 4 ranks (--zero 3 --shard-group G): it must match serial, and every
# communicator's bytes must equal the formulas on every rank (tests/check_comm_volumes.py's
# hybrid_expected). G = 4 must record exactly plain ZeRO-3's communication, G = 1 exactly DDP's
# (the runs above).
for variant in "1" "2" "2 --no-overlap" "4"; do
  read -r group extra <<<"$variant"
  name="4 ranks, zero 3, shard group $group${extra:+ $extra}"
  out=$tmp/hybrid-$group${extra:+-no-overlap}.h5
  log=$tmp/log
  # shellcheck disable=SC2086
  run_verified "$name" 120 "$log" 4 bin/data "${tiny[@]}" --zero 3 --shard-group "$group" \
    $extra --verify --out "$out" || continue
  ok "$name matches serial ($(verify_figure "$log"))"
  expect_volume_table "$name" "$log"
  if ((!have_h5py)); then
    skip "$name volumes" "h5py not available in .venv"
    continue
  fi
  expect_output "$name volumes" \
    "$python" tests/check_comm_volumes.py "$out" 3 4 "$bucket_elements" "$group"
  same=""
  [[ $group == 4 ]] && same=$tmp/run-4-3.h5
  [[ $group == 1 ]] && same=$tmp/run-4-0.h5
  if [[ -n $same && -z $extra ]]; then
    expect_output "$name records what $(basename "$same" .h5) does" \
      "$python" tests/check_same_comm.py "$out" "$same"
  fi
done

# Epoch-end evaluations between training steps (ZeRO-3 gathers parameters for them) must not be
# counted as any iteration's traffic: 3 epochs of a 24-sample IDX set, volumes checked per
# iteration.
idx=$tmp/idx
if [[ -x $python ]] && "$python" tests/make_idx.py "$idx" 24 20; then
  out=$tmp/epochs.h5
  if timeout 120 mpiexec -n 2 bin/data "${tiny[@]}" --iters 0 --epochs 3 --data "idx:$idx" \
      --zero 3 --verify --out "$out" >"$tmp/log" 2>&1 && grep -q "verify: PASS" "$tmp/log"; then
    if why=$("$python" tests/check_comm_volumes.py "$out" 3 2 "$bucket_elements"); then
      ok "ZeRO-3 over 3 epochs with evaluations between them: volumes per iteration $why"
    else
      not_ok "ZeRO-3 over 3 epochs: evaluation traffic counted in an iteration" "$why"
    fi
  else
    not_ok "ZeRO-3 over 3 epochs" "$(grep -E 'verify:|rror' "$tmp/log" | head -n 2 | tr '\n' ' ')"
  fi
fi

# Bad grids and splits: non-zero exit on every rank, one line per rank naming the problem.
# refused NAME RANKS PATTERN ARGS...: the tiny run with ARGS must be refused on every rank in
# one line naming PATTERN (the harness's expect_refusal).
refused() {
  local name=$1 ranks=$2 pattern=$3
  shift 3
  expect_refusal "$name" "$ranks" "$pattern" bin/data "${tiny[@]}" "$@"
}
refused "--dp 3 on 4 ranks" 4 "--dp 3" --dp 3
refused "--batch 3 on 4 ranks" 4 "--batch 3" --batch 3
refused "--zero 4" 2 "--zero" --zero 4
refused "--comm nccl on the cpu backend" 2 "nccl" --comm nccl --device cpu
# Checked before training, so an hour of work is never lost to an unwritable result path.
refused "--out in an unwritable place" 2 "--out /proc/mlpscale/x.h5" --out /proc/mlpscale/x.h5
mkdir -p "$tmp/existing-dir"
refused "--out naming an existing directory" 2 "is a directory" --out "$tmp/existing-dir"
refused "--shard-group 3 on 4 ranks" 4 "--shard-group 3 does not divide" --zero 3 --shard-group 3
refused "--shard-group without --zero 3" 4 "--shard-group 2 needs --zero 3" --zero 2 --shard-group 2
refused "--shard-group 0" 2 "--shard-group" --zero 3 --shard-group 0
refused "--bucket-mb nan" 2 "--bucket-mb" --bucket-mb nan
refused "--bucket-mb inf" 2 "--bucket-mb" --bucket-mb inf

# --timeout: one of 3 ranks is stopped (SIGSTOP) mid-run; the others report their last
# communication calls and the job ends within the limit + 10 s with a non-zero status (124 from
# the reporting rank, or the launcher's own when it ends the rest first).
limit=4
start=$(date +%s)
timeout 60 mpiexec -n 3 bin/data "${tiny[@]}" --iters 1000000 --timeout "$limit" \
  --out "$tmp/hang.h5" >"$tmp/out" 2>"$tmp/err" &
launcher=$!
victim=""
for _ in $(seq 1 100); do
  victim=$(pgrep -f -n "^bin/data ${tiny[0]}.*--timeout $limit") && break
  sleep 0.1
done
sleep 2
[[ -n $victim ]] && kill -STOP "$victim"
stopped_at=$(date +%s)
status=0
wait "$launcher" || status=$?
took=$(($(date +%s) - stopped_at))
reports=$(grep -c "no progress for .* (--timeout $limit); its last communication calls" "$tmp/err")
if [[ -z $victim ]]; then
  not_ok "--timeout with a stopped rank" "no rank to stop was found"
elif ((status != 0 && took <= limit + 10 && reports >= 1)) &&
     grep -q "allreduce *on world" "$tmp/err" && [[ ! -e $tmp/hang.h5 ]]; then
  ok "--timeout $limit: a stopped rank is reported by $reports of the 2 others after $took s (exit $status)"
else
  not_ok "--timeout with a stopped rank" \
    "exit status $status after $took s, $reports reports: $(head -c 600 "$tmp/err" | tr '\n' '|')"
fi
pkill -KILL -f "bin/data ${tiny[0]}.*--timeout $limit" 2>/dev/null
refused "--timeout -1" 2 "--timeout" --timeout -1
MLPSCALE_TIMEOUT=soon refused "MLPSCALE_TIMEOUT=soon" 2 "MLPSCALE_TIMEOUT"

# Threads per rank: the node's cores shared among its ranks when neither OPENBLAS_NUM_THREADS
# nor OMP_NUM_THREADS is set (mpiexec here binds no rank to its own cores), else as they say.
threads_header() {  # threads_header RANKS ENV...: the header's "cpu (N threads per rank)" count
  env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS "${@:2}" timeout 120 mpiexec -n "$1" bin/data \
    "${tiny[@]}" --out "$tmp/threads.h5" 2>&1 | sed -n 's/^  device      cpu (\([0-9]*\) threads\{0,1\} per rank).*/\1/p'
}
cores=$(nproc)
((cores > 64)) && cores=64  # Debian's OpenBLAS is built for at most 64 threads
alone=$(threads_header 1)
shared=$(threads_header 2)
given=$(threads_header 2 OMP_NUM_THREADS=1)
# The result file records the count too (checked on the last run, OMP_NUM_THREADS=1).
recorded=$given
if ((have_h5py)); then
  recorded=$("$python" -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r").attrs["cpu_threads"])' \
    "$tmp/threads.h5" 2>&1)
fi
if [[ $alone == "$cores" && $shared == "$((cores / 2 > 1 ? cores / 2 : 1))" && $given == 1 &&
      $recorded == 1 ]]; then
  ok "threads per rank on $cores cores: $alone for 1 rank, $shared each for 2, 1 with OMP_NUM_THREADS=1"
else
  not_ok "threads per rank" "on $cores cores: 1 rank '$alone', 2 ranks '$shared', OMP_NUM_THREADS=1 '$given' (file: '$recorded')"
fi

finish
