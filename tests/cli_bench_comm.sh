#!/usr/bin/env bash
# Command-line tests of bin/bench_comm on the CPU backend: short sweeps on 4 and 3 ranks show zero
# wrong elements for every collective and size and write the HDF5 file results/README.md
# documents ("Collective benchmark files"); bad options are exit status 2 with one line per rank.
# Prints "ok - NAME" / "not ok - NAME: WHY" / "skip - NAME: WHY" per check and ends with
# "N passed, N failed"; exits non-zero if any check failed. Takes about half a minute on 2 cores.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

bench=${BENCH_COMM:-$repo/bin/bench_comm}
mpiexec=${MPIEXEC:-mpiexec}

if [[ ! -x $bench ]]; then
  problem "$bench not found (run 'make bin/bench_comm' first)"
  report "bin/bench_comm exists"
  finish
fi
if ! command -v "$mpiexec" >/dev/null; then
  problem "no '$mpiexec' on PATH (set MPIEXEC)"
  report "mpiexec exists"
  finish
fi

# run_bench RANKS ARGS...: bin/bench_comm on RANKS ranks in the empty directory $tmp/run; sets rc,
# output in $tmp/stdout and $tmp/stderr.
run_bench() {
  local ranks=$1
  shift
  rm -rf "$tmp/run"
  mkdir "$tmp/run"
  (cd "$tmp/run" && timeout 120 "$mpiexec" -n "$ranks" "$bench" "$@" >"$tmp/stdout" 2>"$tmp/stderr")
  rc=$?
  ((rc == 124)) && problem "timed out after 120 s"
}
first_lines() { head -n 3 "$1" | tr '\n' '|' | head -c 400; }
# "exit status N" and, if any, the first lines of stderr.
exit_problem() {
  local err
  err=$(first_lines "$tmp/stderr")
  problem "exit status $rc${err:+: $err}"
}

# check_table OPS...: stdout has one table per op, each with data rows whose #wrong (last field)
# is 0, the #wrong column header, and the closing lines of a clean run.
check_table() {
  grep -q '#wrong' "$tmp/stdout" || problem "no #wrong column header"
  local op rows bad
  for op in "$@"; do
    # The rows of op's table: from its title line to the next title or the closing block.
    rows=$(awk -v op="$op" '/^# [a-z_]+ \(/ { on = ($2 == op); next } /^#/ { next } on' "$tmp/stdout")
    [[ -n $rows ]] || { problem "no rows for $op"; continue; }
    bad=$(awk '$NF != "0"' <<<"$rows")
    [[ -z $bad ]] || problem "$op rows with wrong elements: $(head -n 2 <<<"$bad" | tr '\n' '|')"
  done
  grep -q '^# Out of bounds values : 0 OK' "$tmp/stdout" ||
    problem "no '# Out of bounds values : 0 OK' line"
  grep -q '^# Avg bus bandwidth *: [0-9]' "$tmp/stdout" || problem "no '# Avg bus bandwidth' line"
}

# check_file NAME FILE RANKS DATATYPE OPS...: the result file's contents, as its own check.
check_file() {
  local name=$1
  shift
  check_result_file "$name" tests/check_bench_comm_result.py "$@"
}

all_ops=(allreduce allgather reduce_scatter broadcast sendrecv)

# expect_sweep NAME RANKS DATATYPE OPS -- ARGS...: a clean sweep and its file.
expect_sweep() {
  local name=$1 ranks=$2 datatype=$3
  shift 3
  local -a ops=()
  while [[ $1 != -- ]]; do ops+=("$1"); shift; done
  shift
  run_bench "$ranks" "$@" --out "$tmp/out/$ranks.h5"
  ((rc == 0)) || exit_problem
  grep -q "^# bench_comm: $ranks ranks, backend mpi, device cpu, datatype $datatype" "$tmp/stdout" ||
    problem "header line: $(first_lines "$tmp/stdout")"
  check_table "${ops[@]}"
  report "$name"
  check_file "$name" "$tmp/out/$ranks.h5" "$ranks" "$datatype" "${ops[@]}"
}

mkdir -p "$tmp/out"
expect_sweep "4 ranks: every collective, 8 B to 64 KiB, no wrong elements" 4 float "${all_ops[@]}" \
  -- -b 8 -e 64K -n 3 -w 1
expect_sweep "3 ranks (not a power of two): every collective, no wrong elements" 3 float \
  "${all_ops[@]}" -- -b 8 -e 64K -n 3 -w 1
expect_sweep "2 ranks: one collective in double, two check iterations" 2 double allreduce \
  -- -b 8 -e 4K -n 2 -w 1 -c 2 --op allreduce -d double

# --evict-bytes: each timed call alone after writing other memory; still exact, and recorded.
expect_sweep "2 ranks: --evict-bytes 1M, every collective, no wrong elements" 2 float \
  "${all_ops[@]}" -- -b 8 -e 64K -n 2 -w 1 --evict-bytes 1M
grep -q '^# evict: each rank writes 1048576 bytes' "$tmp/stdout" || problem "no '# evict:' line"
if ((have_h5py)); then
  evict=$("$python" -c 'import h5py, sys; print(h5py.File(sys.argv[1]).attrs["evict_bytes"])' \
    "$tmp/out/2.h5" 2>&1)
  [[ $evict == 1048576 ]] || problem "attribute evict_bytes is '$evict', expected 1048576"
  report "--evict-bytes is announced and recorded"
else
  skip "--evict-bytes is announced and recorded" "h5py not available ($python)"
fi

# The default file name, relative to the working directory.
run_bench 2 -b 8 -e 256 -n 1 -w 0 --op sendrecv
((rc == 0)) || exit_problem
[[ -f $tmp/run/results/bench/comm-mpi-2.h5 ]] || problem "results/bench/comm-mpi-2.h5 not written"
left=$(cd "$tmp/run" && find . -name '*.tmp.*')
[[ -z $left ]] || problem "temporary files left: $left"
report "default --out is results/bench/comm-<backend>-<ranks>.h5"

# -c 0: nothing checked, so #wrong is N/A and the run still succeeds.
run_bench 2 -b 8 -e 64 -n 1 -w 0 -c 0 --op broadcast --out "$tmp/run/x.h5"
((rc == 0)) || exit_problem
[[ -n $(awk '!/^#/ && $NF == "N/A"' "$tmp/stdout") ]] || problem "no N/A in the #wrong column"
grep -q 'not checked' "$tmp/stdout" || problem "closing line does not say 'not checked'"
report "-c 0 leaves #wrong as N/A"

# expect_input_error NAME PATTERN ARGS...: on 2 ranks, exit 2 with one stderr line per rank,
# "bench_comm (rank R): error: ..." matching PATTERN, nothing on stdout and no file.
expect_input_error() {
  local name=$1 pattern=$2
  shift 2
  run_bench 2 -n 1 -w 0 "$@" --out "$tmp/run/x.h5"
  ((rc == 2)) || problem "exit status $rc, expected 2"
  local lines
  lines=$(grep -c '' "$tmp/stderr")
  ((lines == 2)) || problem "$lines stderr lines, expected 2: $(first_lines "$tmp/stderr")"
  local r
  for r in 0 1; do
    grep -q "^bench_comm (rank $r): error: " "$tmp/stderr" ||
      problem "no 'bench_comm (rank $r): error: ' line: $(first_lines "$tmp/stderr")"
  done
  grep -qiE -- "$pattern" "$tmp/stderr" ||
    problem "stderr does not match '$pattern': $(first_lines "$tmp/stderr")"
  [[ -s $tmp/stdout ]] && problem "stdout not empty: $(first_lines "$tmp/stdout")"
  [[ -e $tmp/run/x.h5 ]] && problem "result file written"
  report "$name"
}

expect_input_error "unknown option" "bogus" --bogus
expect_input_error "--minbytes larger than --maxbytes" "minbytes.*maxbytes" -b 64 -e 8
expect_input_error "size that is not a size" "12X" -b 12X
expect_input_error "unknown collective" "--op" --op alltoall
expect_input_error "step factor below 2" "stepfactor" -f 1
expect_input_error "--evict-bytes that is not a size" "evict-bytes" --evict-bytes lots
expect_input_error "--comm nccl on the cpu backend" "nccl" --comm nccl --device cpu

# A bad --out is refused before the sweep: a directory, and a place nobody can write.
mkdir -p "$tmp/outdir"
for bad in "$tmp/outdir" /proc/mlpscale/x.h5; do
  run_bench 2 -n 1 -w 0 -b 8 -e 8 --out "$bad"
  ((rc == 2)) || problem "exit status $rc, expected 2"
  (($(grep -c '' "$tmp/stderr") == 2)) || problem "stderr: $(first_lines "$tmp/stderr")"
  grep -q -- "--out $bad" "$tmp/stderr" || problem "stderr: $(first_lines "$tmp/stderr")"
  [[ -s $tmp/stdout ]] && problem "the sweep ran: $(first_lines "$tmp/stdout")"
  report "--out $bad refused before the sweep"
done

finish
