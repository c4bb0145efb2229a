#!/usr/bin/env bash
# The prepared GPU check, `make gpu-check`: what to run first whenever a machine with NVIDIA GPUs
# is at hand. It builds bin/ for the GPU's architecture, then (3.5 minutes on one H200 with 16
# cores, the build aside):
#   1. the CUDA kernels against their CPU twins (bin/unit_tests);
#   2. bench_kernels' GEMMs on the GPU in fp32, tf32 and bf16 at the tutorial's and the
#      Llama-2-7B preset's shapes and a square 4096^3;
#   3. the serial step of the tutorial and of the Llama-2-7B-shaped preset in fp32, tf32
#      (--math tf32) and bf16, each measured against its prediction on
#      inputs/machines/h100-cluster.json (time and peak memory);
#   4. the 4-stage pipeline's bubble (1F1B, 8 micro-batches) against the ideal and the
#      simulation of its measured passes: on 4 GPUs where there are, else on the CPU;
#   5. ZeRO-Offload: bench_kernels' host-GPU copies and offloaded Adam, and bin/data's bf16
#      ZeRO-2 step on the tutorial with its optimizer state on the GPU and in host memory;
#   6. every scheme's `--device cuda --verify` (tests/emulated_gpu_tests.sh on the build), last:
#      it takes longest, and the figures above come first when time is short.
# A step that runs past its limit (5 minutes, 10 for step 6) is stopped and counted as failed.
# Every step's output and every result file go to one folder (default results/gpu-check); the
# summary, one line a step and one a run, to stdout and to summary.txt there. Exit status 1 when
# a step failed.
# --dry-run BIN_DIR: no build, tiny sizes and short steps on BIN_DIR; `make test` runs it on
# bin/emulate (the emulated GPU) to check this script's own logic.
# --prebuilt BIN_DIR: no build, the full check on BIN_DIR, built elsewhere for this GPU (`make
# CUDA=1 CUDA_ARCHS=90` on a login node whose compute nodes have no compiler or headers).
# --time-limit SECONDS: the whole check ends within this (a batch job's or a lease's limit): each
# step's limit shrinks to the time left, and a step with none left is counted as failed, unrun.
# Usage: bash tests/gpu_check.sh [--dry-run BIN_DIR | --prebuilt BIN_DIR] [--out DIR]
#        [--time-limit SECONDS]
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

bin=bin
dry=0
prebuilt=0
deadline=0
out=results/gpu-check
while (($#)); do
  case $1 in
    --dry-run) dry=1 bin=${2:?--dry-run needs the build folder, e.g. bin/emulate}; shift 2 ;;
    --prebuilt) prebuilt=1 bin=${2:?--prebuilt needs the build folder, e.g. bin}; shift 2 ;;
    --time-limit) deadline=$(($(date +%s) + ${2:?--time-limit needs seconds})); shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    *) echo "gpu_check: error: unknown argument '$1' (usage: [--dry-run BIN_DIR |" \
         "--prebuilt BIN_DIR] [--out DIR] [--time-limit SECONDS])" >&2
       exit 2 ;;
  esac
done
python=.venv/bin/python3
[[ -x $python ]] || python=python3
machine=inputs/machines/h100-cluster.json
rm -rf "$out" && mkdir -p "$out" || exit 1
summary=$out/summary.txt
: >"$summary"
passed=0
failed=0
say() { echo "$*" | tee -a "$summary"; }

# [limit=SECONDS] step NAME LOG COMMAND...: runs COMMAND with its output in $out/LOG, one summary
# line with its time; a failure (or a run past the limit, default 300 s) is counted and its last
# line shown.
step() {
  local name=$1 log=$out/$2 start status=0 seconds=${limit:-300}
  shift 2
  if ((deadline)); then  # 20 s kept for the summary
    local left=$((deadline - $(date +%s) - 20))
    if ((left < 1)); then
      failed=$((failed + 1))
      say "FAILED $name: not run, no time left under --time-limit"
      return
    fi
    ((left < seconds)) && seconds=$left
  fi
  start=$(date +%s%N)
  timeout "$seconds" "$@" >"$log" 2>&1 || status=$?
  local tenths=$((($(date +%s%N) - start) / 100000000))
  seconds=$((tenths / 10)).$((tenths % 10))
  if ((status == 0)); then
    passed=$((passed + 1))
    say "ok     $name (${seconds} s)"
  else
    failed=$((failed + 1))
    say "FAILED $name (${seconds} s, exit $status): $(tail -n 1 "$log" | cut -c1-160)"
  fi
}

if ((dry)); then
  say "gpu-check, dry run on $bin (tiny sizes: checks this script, measures nothing)"
  model=(--hidden 24 --layers 4 --image-size 6 --ffn-mult 2 --batch 16)
  llama=("${model[@]}")
  kernels_tutorial=("${model[@]}")
  kernels_llama=("${model[@]}")
  gemm_filter='^gemm/cuda/(f32|tf32|bf16)/NT/'  # the forward shapes: no emulated 4096^3
  iters=(--iters 4 --warmup 1)
  min_time=0.002
  gpus=0
else
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_check: error: no NVIDIA GPU here (nvidia-smi -L fails); on the CPU, make test" \
         "runs the emulated GPU" >&2
    exit 2
  fi
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '.')
  say "gpu-check on $(nvidia-smi --query-gpu=name,memory.total,driver_version \
    --format=csv,noheader | head -n 1) ($gpus GPU(s), sm_$arch), $(nproc) cores"
  if ((prebuilt)); then
    say "prebuilt: $bin ($(cuobjdump --list-elf "$bin/serial" 2>/dev/null | grep -o 'sm_[0-9]*' |
      sort -u | tr '\n' ' ')machine code)"
  else
    step "build for sm_$arch" build.log make -j"$(nproc)" CUDA=1 CUDA_ARCHS="$arch" all
  fi
  model=(--config inputs/tutorial.json)
  llama=(--config inputs/llama-2-7b.json)
  # bench_kernels takes the model's sizes as options, not a --config: each preset's, from it.
  sizes='import json, sys
c = json.load(open(sys.argv[1]))
for k in ("hidden", "layers", "ffn-mult", "ffn-hidden", "image-size", "batch"):
    if k in c: print(f"--{k}"); print(c[k])'
  mapfile -t kernels_tutorial < <("$python" -c "$sizes" inputs/tutorial.json)
  mapfile -t kernels_llama < <("$python" -c "$sizes" inputs/llama-2-7b.json)
  gemm_filter='^gemm/cuda/(f32|tf32|bf16)/'
  iters=(--iters 20 --warmup 5)
  min_time=0.05
fi
run=(--device cuda --print-every 0 --eval-samples 64 --machine "$machine")

# 1. The CUDA kernels against their CPU twins.
filter='*Cuda*:*Gpu*:Gemm16bit.*:RoundedUpdate.*'
step "CUDA kernels against the CPU (unit tests $filter)" unit_tests.log \
  "$bin/unit_tests" --gtest_filter="$filter"

# 2. GEMMs in fp32, tf32 and bf16 at each preset's shapes and a square 4096^3.
for preset in tutorial llama; do
  if [[ $preset == tutorial ]]; then sizes=("${kernels_tutorial[@]}")
  else sizes=("${kernels_llama[@]}"); fi
  step "bench_kernels' GEMMs on the GPU, $preset shapes" "kernels-$preset.log" \
    "$bin/bench_kernels" --backends cuda "${sizes[@]}" --benchmark_filter="$gemm_filter" \
    --benchmark_min_time="$min_time" --benchmark_out="$out/kernels-$preset.json" \
    --benchmark_out_format=json
done

# 3. Serial steps in each precision, measured against predicted.
for preset in tutorial llama; do
  if [[ $preset == tutorial ]]; then args=("${model[@]}"); else args=("${llama[@]}"); fi
  for math in fp32 tf32 bf16; do
    extra=()
    [[ $math == tf32 ]] && extra=(--math tf32)
    [[ $math == bf16 ]] && extra=(--precision bf16)
    step "serial $preset $math" "serial-$preset-$math.log" "$bin/serial" "${args[@]}" \
      "${iters[@]}" "${run[@]}" "${extra[@]}" --out "$out/serial-$preset-$math.h5"
  done
done

# 4. The pipeline's bubble with 4 stages: on 4 GPUs over NCCL where there are, else on the CPU
# with a core per rank (4 ranks sharing one GPU would time their sharing, not the schedule).
if ((gpus >= 4)); then
  pipe=("${run[@]}" --comm nccl)
  where="4 GPUs"
else
  pipe=(--device cpu --print-every 0 --eval-samples 64 --comm mpi)
  where="the CPU, a core per rank"
fi
step "pipeline 1f1b, 4 stages, 8 micro-batches, on $where" pipeline.log \
  env OPENBLAS_NUM_THREADS=1 mpiexec -n 4 "$bin/pipeline" "${model[@]}" "${iters[@]}" \
  "${pipe[@]}" --pp 4 --micro-batches 8 --schedule 1f1b --out "$out/pipeline-1f1b.h5"
grep -h 'bubble fraction' "$out/pipeline.log" | head -n 1 | sed 's/^ */       /' | tee -a "$summary"

# 5. ZeRO-Offload on the GPU: bench_kernels' copies between host and GPU (pinned and pageable)
# and the update of a tensor whose state is on the host; then the tutorial in bf16 under ZeRO-2
# on one rank, its optimizer state on the GPU and in host memory (the CPU's Adam), the two steps
# side by side, each against its prediction.
step "bench_kernels' host-GPU copies and offloaded Adam" kernels-offload.log \
  "$bin/bench_kernels" --backends cuda "${kernels_tutorial[@]}" \
  --benchmark_filter='^(copy_to_device|copy_to_host|offload_adam/host)/' \
  --benchmark_min_time="$min_time" --benchmark_out="$out/kernels-offload.json" \
  --benchmark_out_format=json
for tier in gpu host; do
  extra=()
  [[ $tier == host ]] && extra=(--offload optimizer --offload-to host)
  step "data ZeRO-2 bf16, optimizer state on the $tier" "data-offload-$tier.log" \
    "$bin/data" "${model[@]}" "${iters[@]}" "${run[@]}" --precision bf16 --zero 2 "${extra[@]}" \
    --out "$out/data-offload-$tier.h5"
done

# 6. Every scheme's --verify on the GPU, last because it takes longest (up to 10 minutes); the
# dry run's emulated GPU runs them in make test.
if ((dry)); then
  step "serial --device cuda --verify" verify.log "$bin/serial" "${model[@]}" "${iters[@]}" \
    "${run[@]}" --verify --out "$out/verify.h5"
else
  limit=600 step "every scheme's --device cuda --verify (tests/emulated_gpu_tests.sh $bin)" \
    verify.log bash tests/emulated_gpu_tests.sh "$bin"
fi

say ""
if "$python" tests/gpu_check_summary.py "$out"/*.json "$out"/*.h5 2>&1 | tee -a "$summary"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  say "FAILED the summary of the result files (a file unreadable, or a verification failed)"
fi
say "gpu-check: $passed passed, $failed failed (steps; everything is in $out)"
((failed == 0))
