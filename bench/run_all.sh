#!/usr/bin/env bash
# What `make bench` runs after building, from the repo root: the kernel micro-benchmarks (console
# output shown, JSON kept for the floor), then the step-time floor when that binary is built.
set -euo pipefail

mkdir -p results/bench
# Three repetitions: the console shows their medians, the JSON keeps each, and bench_floor takes
# the fastest (a single short run of a GEMM can land on a bad moment of a shared machine).
bin/bench_kernels --benchmark_repetitions=3 --benchmark_display_aggregates_only=true \
  --benchmark_out=results/bench/kernels.json --benchmark_out_format=json
if [[ -x bin/bench_floor ]]; then
  # --iters explicitly: the preset sets epochs, which --iters must override.
  bin/bench_floor --kernels results/bench/kernels.json --config inputs/tutorial.json --iters 12
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
run_data results/bench/data-zero3-shard-group2.h5 --zero 3 --shard-group 2
.venv/bin/python analysis/run_table.py results/bench/data-ddp-overlap.h5 \
  results/bench/data-ddp-no-overlap.h5 results/bench/data-zero{1,2,3}.h5 \
  results/bench/data-zero3-shard-group2.h5

# Megatron tensor parallelism on 4 ranks: T = 4, T = 2 x D = 2 and pure data parallelism
# (T = 1 x D = 4): communication volumes and peak memory per rank.
echo
echo "== bin/tensor1d on 4 ranks: --tp 4 (and --sequence-parallel), --tp 2 --dp 2, --tp 1 --dp 4"
t1d_shape=(--hidden 512 --layers 4 --image-size 32 --batch 64 --iters 12 --warmup 2 --print-every 0)
for grid in "4 1" "2 2" "1 4" "4 1 --sequence-parallel"; do
  read -r tp dp sp <<<"$grid"
  OPENBLAS_NUM_THREADS=1 mpiexec -n 4 bin/tensor1d "${t1d_shape[@]}" --tp "$tp" --dp "$dp" $sp \
    --out "results/bench/tensor1d-tp$tp-dp$dp${sp:+-sp}.h5" >/dev/null
done
.venv/bin/python analysis/run_table.py results/bench/tensor1d-tp{4-dp1,4-dp1-sp,2-dp2,1-dp4}.h5

# 2D SUMMA tensor parallelism on 4 ranks: q = 2 against q = 1 x dp = 4 (data parallelism
# through the same code): communication volumes and peak memory per rank.
echo
echo "== bin/tensor2d on 4 ranks: --tp-dims 2,2 and --tp-dims 1,1 --dp 4"
t2d_shape=(--hidden 512 --layers 4 --image-size 32 --batch 64 --iters 12 --warmup 2 --print-every 0)
OPENBLAS_NUM_THREADS=1 mpiexec -n 4 bin/tensor2d "${t2d_shape[@]}" --tp-dims 2,2 \
  --out results/bench/tensor2d-q2.h5 >/dev/null
OPENBLAS_NUM_THREADS=1 mpiexec -n 4 bin/tensor2d "${t2d_shape[@]}" --tp-dims 1,1 --dp 4 \
  --out results/bench/tensor2d-q1-dp4.h5 >/dev/null
.venv/bin/python analysis/run_table.py results/bench/tensor2d-q2.h5 results/bench/tensor2d-q1-dp4.h5

# AxoNN 3D on 4 ranks: the tutorial's question, [4,1,1] against [2,2,1] and [1,1,4] at batch 32
# (overlap flags off, then all four on): step time, exposed communication, analytic volume and
# peak memory in one table.
echo
echo "== bin/tensor3d on 4 ranks: [4,1,1] vs [2,2,1] vs [1,1,4], batch 32"
bash bench/tensor3d_corners.sh

echo
echo "== bin/pipeline on 4 ranks: five schedules, bubble vs micro-batches and activation memory"
bash bench/pipeline_bubble.sh

echo
echo "== activation checkpointing: peak memory per scheme, tutorial config at batch 256"
bash bench/checkpoint_memory.sh

# A small scaling study across the schemes, run locally the way jobs/sweep runs one on Slurm.
echo
echo "== local scaling study (jobs/sweep inputs/sweeps/local-small.json --launcher mpiexec)"
jobs/sweep inputs/sweeps/local-small.json --launcher mpiexec

# bin/plan's model against runs on this machine: every scheme on 2 ranks (and 4, time-sharing
# the cores), each run recording its own prediction from this machine's description (written
# once by make calibrate); the closing lines are plan_accuracy's figures.
echo
echo "== bin/plan's predictions against runs (inputs/sweeps/plan-validation.json)"
[[ -s inputs/machines/local.json ]] || bash bench/calibrate.sh
rm -rf results/plan-validation
jobs/sweep inputs/sweeps/plan-validation.json --launcher mpiexec | tail -n 1
.venv/bin/python analysis/plan_accuracy.py results/plan-validation \
  --out results/plan-validation/plots | tail -n 3

# Plots of everything above (and of any other results), with a summary page to look at.
echo
echo "== plots"
.venv/bin/python analysis/make_plots.py results
