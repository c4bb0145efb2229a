#!/usr/bin/env bash
# `make calibrate`: this machine's description (inputs/machines/local.json, not tracked), which
# bin/plan and every run's own prediction use by default: bin/bench_kernels' GEMMs and streams
# at the plan-validation model's shapes (and its data loader's samples), a bin/bench_comm
# all-reduce sweep on 2 ranks, then bin/plan --calibrate. The kernels run on all of a CPU's cores (unless OPENBLAS_NUM_THREADS says
# otherwise; rates from fewer threads are scaled to the cores), so the node's rates include what
# its cores cost each other when all are busy; a pipeline's re-reads of its weights are timed as
# its ranks run (one copy of the benchmark per core). Inputs stay in results/calibration/. Argument:
# another output file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-inputs/machines/local.json}
dir=results/calibration
mkdir -p "$dir"

echo "calibrate: bin/bench_kernels (GEMMs, copy, STREAM add, the data loader, the offload file; about a minute)"
bin/bench_kernels --hidden 512 --layers 4 --image-size 32 --batch 64 --offload-dir "$dir" \
  --benchmark_filter='^(gemm|copy|stream_add|sample_load|offload_adam)/' --benchmark_repetitions=2 \
  --benchmark_out="$dir/kernels.json" --benchmark_out_format=json >"$dir/kernels.log" 2>&1 ||
  { tail -n 3 "$dir/kernels.log"; exit 1; }
# Which kernels every rate below comes from (docs/cpu-blas.md); local.json's sources name it too.
sed -nE 's/^mlpscale_(blas|blas_notice|cpu): /calibrate:   \1 /p' "$dir/kernels.log"
echo "calibrate: bin/bench_kernels' GEMMs by rows (8 to 512, one thread)"
by_rows=()
for rows in 8 16 32 64 128 256 512; do
  OPENBLAS_NUM_THREADS=1 bin/bench_kernels --hidden 512 --layers 4 --image-size 32 \
    --batch "$rows" --backends cpu --benchmark_min_time=0.1 \
    --benchmark_filter="^gemm/cpu/f32/(NT/m:$rows/n:2048|NN/m:$rows/n:512/k:2048|TN/m:2048/n:512/k:$rows\$|NN/m:2048/n:2048)" \
    --benchmark_out="$dir/kernels-rows$rows.json" --benchmark_out_format=json \
    >"$dir/kernels.log" 2>&1 || { tail -n 3 "$dir/kernels.log"; exit 1; }
  by_rows+=("$dir/kernels-rows$rows.json")
done
# Adam at the default model's largest weight (16M elements, 448 MB of traffic): a step's update
# streams the whole model from memory, which the plan-validation model's 1M would not.
echo "calibrate: bin/bench_kernels' Adam update beyond the caches"
bin/bench_kernels --benchmark_filter='^adam_update/' \
  --benchmark_repetitions=2 --benchmark_out="$dir/kernels-optimizer.json" \
  --benchmark_out_format=json >"$dir/kernels.log" 2>&1 || { tail -n 3 "$dir/kernels.log"; exit 1; }
# What one core streams while the other cores idle (a rank alone on the node, as serial runs).
echo "calibrate: bin/bench_kernels' streams and Adam update on one core"
OPENBLAS_NUM_THREADS=1 bin/bench_kernels --backends cpu \
  --benchmark_filter='^(copy|stream_add|adam_update)/cpu/f32/' --benchmark_repetitions=2 \
  --benchmark_out="$dir/kernels-one-core.json" --benchmark_out_format=json \
  >"$dir/kernels.log" 2>&1 || { tail -n 3 "$dir/kernels.log"; exit 1; }
# A pipeline's micro-batches read their stage's weights again: weight_restream for a stage of a
# two-stage pipeline of the same model (--layers 2), one single-threaded copy per core at once,
# as a pipeline's ranks run, at micro-batches of 32 rows (the figure) and 8, 16 and 64 (the rate
# by rows: 25, 20, 15 and 10 GB/s here for 8 to 64). The figure is the difference of two
# timings, so each is the median of 5 longer repetitions (four calibrations: 13.7-15.7 GB/s
# here at 32 rows, against 11-21 from the fastest of 2 short ones).
echo "calibrate: bin/bench_kernels' weight re-reads at 32, 8, 16 and 64 rows, one copy a core"
cores=$(nproc)
restream=()
for rows in 32 8 16 64; do
  pids=()
  for ((c = 0; c < cores; c++)); do
    OPENBLAS_NUM_THREADS=1 bin/bench_kernels --hidden 512 --layers 2 --image-size 32 \
      --batch "$rows" --backends cpu --benchmark_filter='^weight_restream/cpu/f32/' \
      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_min_time=0.5 --benchmark_out="$dir/kernels-restream-rows$rows-$c.json" \
      --benchmark_out_format=json >"$dir/restream-$c.log" 2>&1 &
    pids+=($!)
  done
  for ((c = 0; c < cores; c++)); do
    wait "${pids[$c]}" || { tail -n 3 "$dir/restream-$c.log"; exit 1; }
  done
  restream+=("$dir/kernels-restream-rows$rows-0.json")
done
# The node's ranks stream their offloaded state at once (bin/data --offload-to disk:DIR): the
# offload file's Adam in one single-threaded process per core at the same time, for 3 s each:
# offload_bandwidth is all their bytes over the longest one's time (a disk may serve several
# queues faster than one: 2.2 GB/s here in two processes against 1.3 in one).
echo "calibrate: bin/bench_kernels' offload file, one process a core at once"
offload=()
pids=()
for ((c = 0; c < cores; c++)); do
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 bin/bench_kernels --backends cpu \
    --offload-dir "$dir" --benchmark_filter='^offload_adam/disk/' --benchmark_min_time=3 \
    --benchmark_out="$dir/kernels-offload-$c.json" --benchmark_out_format=json \
    >"$dir/offload-$c.log" 2>&1 &
  pids+=($!)
  offload+=("$dir/kernels-offload-$c.json")
done
for ((c = 0; c < cores; c++)); do
  wait "${pids[$c]}" || { tail -n 3 "$dir/offload-$c.log"; exit 1; }
done
echo "calibrate: bin/bench_comm all-reduce on 2 ranks"
mpiexec -n 2 bin/bench_comm --op allreduce -e 32M -n 10 --out "$dir/comm-2.h5" \
  >"$dir/comm.log" 2>&1 || { tail -n 3 "$dir/comm.log"; exit 1; }
echo "calibrate: bin/bench_comm all-reduce on 2 ranks, buffers out of the caches"
mpiexec -n 2 bin/bench_comm --op allreduce -b 1M -e 32M -n 10 --evict-bytes 64M \
  --out "$dir/comm-2-cold.h5" >"$dir/comm-cold.log" 2>&1 || { tail -n 3 "$dir/comm-cold.log"; exit 1; }
bin/plan --calibrate "$out" --kernels "$dir/kernels.json" --comm-bench "$dir/comm-2.h5" \
  --comm-bench-cold "$dir/comm-2-cold.h5" \
  --kernels-by-rows "$(IFS=,; echo "${by_rows[*]}")" \
  --optimizer-kernels "$dir/kernels-optimizer.json" \
  --restream-kernels "$(IFS=,; echo "${restream[*]}")" \
  --offload-kernels "$(IFS=,; echo "${offload[*]}")" \
  --core-kernels "$dir/kernels-one-core.json"
