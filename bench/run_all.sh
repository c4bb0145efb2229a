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
