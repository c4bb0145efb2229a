#!/usr/bin/env bash
# Runs every test suite after the build (`make test` calls it): the GoogleTest binary, the MPI
# GoogleTest binary under mpiexec with 1, 2, 3 and 4 ranks (each a suite; oversubscribed cores
# are fine), then the script suites of SCRIPT_SUITES below (each executable's command line and
# equivalence with serial, volumes, mixed precision, timelines, memory, analysis, the sweep
# driver, Slurm); then, when HIP_CPU_HOME names a HIP-CPU checkout, the unit tests, the MPI
# tests on the GPU and every scheme's --device cuda in the emulated-GPU build. Each suite's output stays visible;
# the last line sums them as "N passed, N failed". Exits non-zero if any test failed or a suite
# ended without its summary. Extra arguments go to bin/unit_tests (e.g. --gtest_filter=Adam*).
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

UNIT_TESTS=bin/unit_tests
MPI_TESTS=bin/mpi_tests
MPI_WORLD_SIZES=(1 2 3 4)
SCRIPT_SUITES=(tests/cli_tests.sh tests/startup_agreement_tests.sh tests/job_end_tests.sh
               tests/blas_core_tests.sh
               tests/data_parallel_tests.sh tests/offload_tests.sh
               tests/cli_bench_comm.sh tests/pipeline_tests.sh tests/tensor1d_tests.sh tests/tensor2d_tests.sh
               tests/tensor3d_tests.sh tests/mixed_precision_tests.sh tests/trace_tests.sh
               tests/memory_tests.sh tests/step_counts_tests.sh tests/plan_tests.sh
               tests/analysis_tests.sh
               tests/sweep_tests.sh tests/slurm_tests.sh tests/multinode_tests.sh
               tests/docs_tests.sh)
passed=0
failed=0
# Each suite's wall time (from the end of the one before), listed at the end.
suite_start=$SECONDS
suite_times=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Output without colour codes, so the summary lines parse whatever GTEST_COLOR says.
plain() { sed 's/\x1b\[[0-9;]*m//g' "$log"; }

# $1: the suite's name, $2: its exit status, $3/$4: the counts parsed from its summary ("" if none).
add_suite() {
  local name=$1 rc=$2 npass=$3 nfail=$4
  suite_times+=("$(printf '%5d s  %s' $((SECONDS - suite_start)) "$name")")
  suite_start=$SECONDS
  if [[ -z $npass && -z $nfail ]]; then
    echo "$name: no summary line (exit status $rc): counted as 1 failed"
    failed=$((failed + 1))
    return
  fi
  npass=${npass:-0}
  nfail=${nfail:-0}
  if (( rc != 0 && nfail == 0 )); then
    echo "$name: exit status $rc with no failed test reported: counted as 1 failed"
    nfail=1
  fi
  passed=$((passed + npass))
  failed=$((failed + nfail))
}

# $1: the suite's name, $2: its exit status; counts from the GoogleTest summary in $log:
# "[  PASSED  ] 12 tests." and "[  FAILED  ] 2 tests, listed below:".
add_gtest_suite() {
  local name=$1 rc=$2 npass nfail nskip
  npass=$(plain | sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' | tail -n1)
  nfail=$(plain | sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' | tail -n1)
  nskip=$(plain | sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?, listed below.*/\1/p' | tail -n1)
  [[ -n $nskip ]] && echo "$name: $nskip skipped (listed above)"
  add_suite "$name" "$rc" "$npass" "$nfail"
}

echo "=== unit tests: $UNIT_TESTS${*:+ $*}"
if [[ -x $UNIT_TESTS ]]; then
  "$UNIT_TESTS" "$@" 2>&1 | tee "$log"
  add_gtest_suite "unit tests" $?
else
  echo "unit tests: $UNIT_TESTS not found (run 'make' first): counted as 1 failed"
  failed=$((failed + 1))
fi

# Rank 0 prints GoogleTest's output (other ranks print only their failures); every rank exits
# non-zero if any failed. One BLAS thread per rank, so that 4 ranks on 2 cores do not thrash;
# the timeout turns a hung collective into a failed suite.
for n in "${MPI_WORLD_SIZES[@]}"; do
  echo "=== MPI tests: mpiexec -n $n $MPI_TESTS"
  if [[ -x $MPI_TESTS ]]; then
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 timeout -k 10 300 mpiexec -n "$n" "$MPI_TESTS" 2>&1 |
      tee "$log"
    add_gtest_suite "MPI tests ($n ranks)" $?
  else
    echo "MPI tests: $MPI_TESTS not found (run 'make' first): counted as 1 failed"
    failed=$((failed + 1))
  fi
done

# Each script prints "ok - ..." lines and closes with its own "N passed, N failed".
for script in "${SCRIPT_SUITES[@]}"; do
  echo "=== $script"
  bash "$script" 2>&1 | tee "$log"
  rc=$?
  counts=$(plain | sed -nE 's/.*\b([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' | tail -n1)
  add_suite "$script" "$rc" "${counts% *}" "${counts#* }"
done

# The emulated-GPU build (make CUDA=emulate, built by `make test` when HIP-CPU is found): the
# unit tests again, now with every CUDA test running on the CPU, the MPI tests' GPU suites, then
# every scheme's --device cuda. There the emulated GPU is always present, so a test skipped for lack
# of a GPU, or of NCCL, is a failure.
add_emulated_gtest_suite() {
  local name=$1 rc=$2 nogpu
  add_gtest_suite "$name" "$rc"
  nogpu=$(plain | grep -cE '^(no GPU|ranks share a GPU|built without)')
  if ((nogpu > 0)); then
    echo "$name: $nogpu skipped for lack of a GPU or NCCL although the emulated GPU is present: counted as failed"
    failed=$((failed + nogpu))
  fi
}
if [[ -n ${HIP_CPU_HOME:-} && -f $HIP_CPU_HOME/include/hip/hip_runtime.h ]]; then
  echo "=== emulated GPU: HIP-CPU found in $HIP_CPU_HOME: the CUDA backend runs on the CPU (bin/emulate)"
  if [[ -x bin/emulate/unit_tests && -x bin/emulate/mpi_tests ]]; then
    echo "=== emulated GPU: bin/emulate/unit_tests"
    bin/emulate/unit_tests 2>&1 | tee "$log"
    add_emulated_gtest_suite "emulated GPU: unit tests" $?
    # Only the MPI tests on the GPU: the others run on the CPU device, as they did above.
    gpu_filter='GpuCommTest.*:*GpuWireFormatTest*'
    for n in "${MPI_WORLD_SIZES[@]}"; do
      echo "=== emulated GPU: mpiexec -n $n bin/emulate/mpi_tests --gtest_filter=$gpu_filter" \
        "(the CPU-device tests ran above)"
      OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 timeout -k 10 300 mpiexec -n "$n" \
        bin/emulate/mpi_tests --gtest_filter="$gpu_filter" 2>&1 | tee "$log"
      add_emulated_gtest_suite "emulated GPU: MPI tests ($n ranks)" $?
    done
  else
    echo "emulated GPU: bin/emulate/unit_tests or mpi_tests not built: counted as 1 failed"
    failed=$((failed + 1))
  fi
  echo "=== tests/emulated_gpu_tests.sh"
  bash tests/emulated_gpu_tests.sh bin/emulate 2>&1 | tee "$log"
  rc=$?
  counts=$(plain | sed -nE 's/.*\b([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' | tail -n1)
  add_suite "tests/emulated_gpu_tests.sh" "$rc" "${counts% *}" "${counts#* }"
  # The prepared GPU check's own logic, at tiny sizes on the emulated GPU (make gpu-check).
  echo "=== tests/gpu_check.sh --dry-run bin/emulate"
  gpu_check_out=$(mktemp -d)
  bash tests/gpu_check.sh --dry-run bin/emulate --out "$gpu_check_out" --time-limit 600 2>&1 |
    tee "$log"
  rc=$?
  rm -rf "$gpu_check_out"
  counts=$(plain | sed -nE 's/.*\b([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' | tail -n1)
  add_suite "tests/gpu_check.sh --dry-run" "$rc" "${counts% *}" "${counts#* }"
else
  echo "=== emulated GPU: HIP-CPU not found (HIP_CPU_HOME=${HIP_CPU_HOME:-unset}): the CUDA backend is not run; CUDA tests above are skipped without a GPU"
fi

echo "=== suite times (wall)"
printf '%s\n' "${suite_times[@]}"
echo "=== all suites"
echo "$passed passed, $failed failed"
(( failed == 0 ))
