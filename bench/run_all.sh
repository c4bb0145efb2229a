#!/usr/bin/env bash
# What `make bench` runs after building, from the repo root: the kernel micro-benchmarks (console
# output shown, JSON kept for the floor), then the step-time floor when that binary is built.
set -euo pipefail

mkdir -p results/bench
# Three repetitions, medians kept: a single short run of a GEMM can land on a bad moment.
bin/bench_kernels --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out=results/bench/kernels.json --benchmark_out_format=json
if [[ -x bin/bench_floor ]]; then
  bin/bench_floor --kernels results/bench/kernels.json --config inputs/tutorial.json
fi

# Collectives on 4 ranks, nccl-tests style: time, algbw, busbw and wrong elements per size.
echo
echo "== bin/bench_comm on 4 ranks"
OPENBLAS_NUM_THREADS=1 mpiexec -n 4 bin/bench_comm -e 1M --out results/bench/comm-4.h5

# Data parallelism on 4 ranks (oversubscribed on small machines; one BLAS thread per rank):
# exposed communication with and without overlap, and peak memory per ZeRO stage.
echo
echo "== bin/data on 4 ranks: DDP overlap vs --no-overlap, ZeRO stages' memory"
shape=(--hidden 512 --layers 4 --image-size 32 --batch 64 --iters 12 --warmup 2 --print-every 0
       --bucket-mb 1)
run_data() {
  local out=$1
  shift
  OPENBLAS_NUM_THREADS=1 mpiexec -n 4 bin/data "${shape[@]}" "$@" --out "$out" >/dev/null
}
run_data results/bench/data-ddp-overlap.h5
run_data results/bench/data-ddp-no-overlap.h5 --no-overlap
for zero in 1 2 3; do
  run_data "results/bench/data-zero$zero.h5" --zero "$zero"
done
.venv/bin/python analysis/run_table.py results/bench/data-ddp-overlap.h5 \
  results/bench/data-ddp-no-overlap.h5 results/bench/data-zero{1,2,3}.h5

# Plots of everything above (and of any other results), with a summary page to look at.
echo
echo "== plots"
.venv/bin/python analysis/make_plots.py results
