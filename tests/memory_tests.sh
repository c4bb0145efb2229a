#!/usr/bin/env bash
# The memory accounting (src/memory): every executable records its estimate beside the measured
# peak (/memory/estimated_bytes, /memory/peak_bytes) and refuses, before allocating, a run that
# cannot fit, in one line per rank naming both figures. serial, data and pipeline account their
# allocations exactly (but for ZeRO 2 with buckets smaller than the model's units); the
# tensor-parallel schemes within +20% / -5% (docs/memory.md).
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

small=(--image-size 12 --hidden 48 --layers 2 --iters 2 --warmup 1 --print-every 0
       --eval-samples 32)

# estimate_matches NAME LOW HIGH RANKS BINARY ARGS...: every rank's estimate / peak in [LOW, HIGH].
estimate_matches() {
  local name=$1 low=$2 high=$3 ranks=$4 binary=$5
  shift 5
  local out=$tmp/estimate.h5
  rm -f "$out"
  if ! timeout 120 mpiexec -n "$ranks" "bin/$binary" "${small[@]}" "$@" --out "$out" \
      >"$tmp/run.log" 2>&1; then
    not_ok "$name" "the run failed: $(tail -n 2 "$tmp/run.log" | tr '\n' '|')"
    return
  fi
  local verdict
  verdict=$("$python" - "$out" "$low" "$high" <<'PY'
import sys, h5py
path, low, high = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
with h5py.File(path, "r") as f:
    peak = f["/memory/peak_bytes"][:]
    estimate = f["/memory/estimated_bytes"][:]
ratios = [e / p for e, p in zip(estimate, peak)]
bad = [f"rank {r}: {x:.3f}" for r, x in enumerate(ratios) if not low <= x <= high]
print("ratios " + " ".join(f"{x:.3f}" for x in ratios) + (" OUTSIDE " + ", ".join(bad) if bad else ""))
PY
)
  if [[ $verdict == *OUTSIDE* || -z $verdict ]]; then
    not_ok "$name" "estimate / measured peak outside [$low, $high]: $verdict"
  else
    ok "$name: estimate / measured peak $verdict"
  fi
}

exact=(1.0 1.0)  # serial, data and pipeline: byte for byte
estimate_matches "serial" "${exact[@]}" 1 serial --batch 16
estimate_matches "serial --fused-update (its dW block)" "${exact[@]}" 1 serial --batch 16 --fused-update
estimate_matches "serial, checkpointing, bf16" "${exact[@]}" 1 serial --batch 16 --checkpoint-activations --precision bf16
estimate_matches "serial, plain blocks, fp64, sgd" "${exact[@]}" 1 serial --batch 16 --block plain --precision fp64 --optimizer sgd
for zero in 0 1 2 3; do
  estimate_matches "data, 2 ranks, zero $zero" "${exact[@]}" 2 data --batch 16 --zero "$zero"
done
estimate_matches "data, 2 ranks, zero 3 without overlap" "${exact[@]}" 2 data --batch 16 --zero 3 --no-overlap
# Typed 16-bit storage: 2-byte values and activations, fp32 gradients and state.
for zero in 0 1 2 3; do
  estimate_matches "data, 2 ranks, zero $zero, bf16" "${exact[@]}" 2 data --batch 16 --zero "$zero" \
    --precision bf16
done
# Hybrid sharding: shards of 1/G; G = 1 computes with its whole units in place, gathering nothing.
for group in 1 2; do
  estimate_matches "data, 4 ranks, zero 3, shard group $group" "${exact[@]}" 4 data --batch 16 \
    --zero 3 --shard-group "$group"
done
estimate_matches "data, 4 ranks, zero 3, shard group 2, fp16" "${exact[@]}" 4 data --batch 16 \
  --zero 3 --shard-group 2 --precision fp16
# Buckets smaller than a unit: the gradient buckets alive at once are estimated, not counted.
estimate_matches "data, 2 ranks, zero 2, 10 KiB buckets" 0.95 1.2 2 data --batch 16 --zero 2 --bucket-mb 0.01
estimate_matches "pipeline, 2 stages, 1f1b" "${exact[@]}" 2 pipeline --batch 16 --micro-batches 4
estimate_matches "pipeline, 2 stages, gpipe" "${exact[@]}" 2 pipeline --batch 16 --micro-batches 4 --schedule gpipe
# Checkpointing (the last stage's shared classifier input) and int32 labels beside fp64 values.
estimate_matches "pipeline, 2 stages, gpipe, checkpointing, fp64" "${exact[@]}" 2 pipeline --batch 16 \
  --micro-batches 4 --schedule gpipe --checkpoint-activations --precision fp64
estimate_matches "pipeline, 2 stages, 1f1b, plain blocks, checkpointing" "${exact[@]}" 2 pipeline \
  --batch 16 --micro-batches 4 --block plain --checkpoint-activations
# Chunks of unequal slots, set aside in action order, and split backwards' W inputs (copied
# from the recompute set with checkpointing).
for schedule in "interleaved --virtual-stages 2" zb-h1 zb-v; do
  # shellcheck disable=SC2086
  estimate_matches "pipeline, 2 stages, ${schedule%% *}" "${exact[@]}" 2 pipeline --layers 4 \
    --batch 16 --micro-batches 4 --schedule $schedule
  # shellcheck disable=SC2086
  estimate_matches "pipeline, 2 stages, ${schedule%% *}, checkpointing, fp64" "${exact[@]}" 2 \
    pipeline --layers 4 --batch 16 --micro-batches 4 --schedule $schedule \
    --checkpoint-activations --precision fp64
done
estimate_matches "pipeline, 2 stages, zb-v, plain blocks, checkpointing, bf16" "${exact[@]}" 2 \
  pipeline --layers 4 --batch 16 --micro-batches 2 --schedule zb-v --block plain \
  --checkpoint-activations --precision bf16
# Typed 16-bit storage: 2-byte values, activations and their gradients (the W inputs too);
# fp32 gradients, state, LayerNorm moments, probabilities and losses.
estimate_matches "pipeline, 2 stages, 1f1b, bf16" "${exact[@]}" 2 pipeline --batch 16 \
  --micro-batches 4 --precision bf16
estimate_matches "pipeline, 2 stages, gpipe, checkpointing, fp16" "${exact[@]}" 2 pipeline \
  --batch 16 --micro-batches 4 --schedule gpipe --checkpoint-activations --precision fp16
estimate_matches "pipeline, 2 stages, interleaved, bf16" "${exact[@]}" 2 pipeline --layers 4 \
  --batch 16 --micro-batches 4 --schedule interleaved --virtual-stages 2 --precision bf16
estimate_matches "pipeline, 2 stages, zb-h1, checkpointing, bf16" "${exact[@]}" 2 pipeline \
  --layers 4 --batch 16 --micro-batches 4 --schedule zb-h1 --checkpoint-activations \
  --precision bf16
estimate_matches "pipeline, 2 x 2 replicas, zb-v, fp16" "${exact[@]}" 4 pipeline --layers 4 \
  --pp 2 --dp 2 --batch 16 --micro-batches 2 --schedule zb-v --precision fp16
estimate_matches "tensor1d, T 2" 0.95 1.2 2 tensor1d --batch 16
estimate_matches "tensor1d, T 2, bf16 (typed)" 0.95 1.2 2 tensor1d --batch 16 --precision bf16
estimate_matches "tensor1d, T 2 x 2, sequence parallel, fp16 (typed)" 0.95 1.2 4 tensor1d \
  --batch 16 --tp 2 --dp 2 --sequence-parallel --precision fp16
estimate_matches "tensor2d, 2 x 2" 0.95 1.2 4 tensor2d --batch 16
estimate_matches "tensor2d, 2 x 2, bf16 (typed)" 0.95 1.2 4 tensor2d --batch 16 --precision bf16
estimate_matches "tensor3d, 2,1,2" 0.95 1.2 4 tensor3d --batch 16 --tp-dims 2,1,2
estimate_matches "tensor3d, 2,1,2, fp16 (typed)" 0.95 1.2 4 tensor3d --batch 16 --tp-dims 2,1,2 \
  --precision fp16
estimate_matches "tensor3d, 1,1,4, cached weights" 0.95 1.2 4 tensor3d --batch 16 --tp-dims 1,1,4 --cache-weights

# Sizes no machine holds: refused before allocation, naming the need and what the rank has.
out=(--out "$tmp/refused.h5")
expect_refusal "serial --hidden 100000000" 1 "needs about" bin/serial --hidden 100000000 "${out[@]}"
expect_refusal "data --hidden 30000000 on 2 ranks" 2 "of host memory" bin/data --hidden 30000000 "${out[@]}"
expect_refusal "pipeline --batch 1000000000 on 2 ranks" 2 "activations" bin/pipeline --batch 1000000000 --micro-batches 1 "${out[@]}"
expect_refusal "tensor1d --hidden 30000000 on 2 ranks" 2 "needs about" bin/tensor1d --hidden 30000000 "${out[@]}"
expect_refusal "tensor2d --hidden 30000000 on 4 ranks" 4 "needs about" bin/tensor2d --hidden 30000000 "${out[@]}"
expect_refusal "tensor3d --hidden 30000000 on 4 ranks" 4 "needs about" bin/tensor3d --hidden 30000000 "${out[@]}"
expect_refusal "serial --hidden 1000000000000 (int64 products would overflow)" 1 "more than 2^60" bin/serial --hidden 1000000000000 "${out[@]}"
expect_refusal "bench_comm -b 64G -e 64G" 1 "lower --maxbytes" bin/bench_comm -b 64G -e 64G --out "$tmp/refused.h5"
expect_refusal "bench_comm -b 8G -e 8G on 2 ranks" 2 "shared by 2 ranks" bin/bench_comm -b 8G -e 8G --out "$tmp/refused.h5"
expect_refusal "bench_kernels --hidden 1099511627776" 1 "more than 2^60" bin/bench_kernels --hidden 1099511627776
# Sizes that once built a table per layer before any check (a hang or std::bad_alloc): refused
# by the option itself, in every program that takes them.
for exe in serial data pipeline tensor1d tensor2d tensor3d bench_floor; do
  expect_refusal "$exe --layers 4294967297" 1 "--layers: must be between 0 and 65536" \
    bin/$exe --layers 4294967297 "${out[@]}"
done
expect_refusal "plan --layers 4294967297" 1 "--layers: must be between 0 and 65536" \
  bin/plan --layers 4294967297 --world 4 --machine inputs/machines/h100-cluster.json
expect_refusal "bench_kernels --layers 4294967297" 1 "--layers: Value 4294967297 not in range" \
  bin/bench_kernels --layers 4294967297
for exe in tensor2d bench_floor; do
  expect_refusal "$exe --ffn-mult 1099511627776" 1 "more than 2^60" \
    bin/$exe --ffn-mult 1099511627776 "${out[@]}"
done
expect_refusal "plan --ffn-mult 1099511627776" 1 "more than 2^60" \
  bin/plan --ffn-mult 1099511627776 --world 4 --machine inputs/machines/h100-cluster.json
expect_refusal "bench_kernels --hidden 200000" 1 "the largest benchmark needs about" bin/bench_kernels --hidden 200000 --backends cpu
# --verify's serial replay on rank 0 (fp64 and fp32 models beside fp64 copies of the parameters,
# about 48 bytes a parameter) counts beside the node's ranks (16 each in DDP): a model of about
# 1/50 of the available memory in parameters fits each rank's share but not the replay as well.
available=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)
hidden=$(awk -v a="$available" 'BEGIN {printf "%d", sqrt(a / 50 / 32)}')  # 4 layers of 8 H^2
expect_refusal "data --verify whose replay does not fit beside the ranks (--hidden $hidden)" 2 \
  "--verify: rank 0's serial replay needs about" bin/data --hidden "$hidden" --layers 4 --verify \
  "${out[@]}"

# The settings header states the estimate, and --skip-memory-check only skips the verdict.
if bin/serial "${small[@]}" --batch 16 --skip-memory-check --out "$tmp/skip.h5" >"$tmp/skip.log" 2>&1 &&
    grep -q "memory      about .* per rank at the peak" "$tmp/skip.log" && [[ -s $tmp/skip.h5 ]]; then
  ok "--skip-memory-check runs, and the header states the estimate"
else
  not_ok "--skip-memory-check runs, and the header states the estimate" "$(tail -n 3 "$tmp/skip.log" | tr '\n' '|')"
fi

# A configuration file is read no further than 1 MiB: a huge one is refused at once.
head -c 2000000 /dev/zero | tr '\0' ' ' >"$tmp/huge.json"
echo '{}' >>"$tmp/huge.json"
expect_refusal "a 2 MB config on 4 ranks" 4 "larger than 1 MiB" bin/serial --config "$tmp/huge.json" "${out[@]}"

finish
