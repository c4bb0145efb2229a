#!/usr/bin/env bash
# The prepared GPU check, `make gpu-check`: what to run first whenever a machine with NVIDIA GPUs
# is at hand. It builds bin/ for the GPU's architecture, then, in about 8 minutes on one GPU:
#   1. the CUDA kernels against their CPU twins (bin/unit_tests);
#   2. every scheme's `--device cuda --verify` (tests/emulated_gpu_tests.sh on bin/);
#   3. bench_kernels' fp32 GEMMs on the GPU at the tutorial's shapes;
#   4. the serial step of the tutorial and of the Llama-2-7B-shaped preset in fp32, tf32
#      (--math tf32) and bf16, each measured against its prediction on
#      inputs/machines/h100-cluster.json (time and peak memory);
#   5. the 4-stage pipeline's bubble (1F1B, 8 micro-batches) against its prediction.
# Every step's output and every result file go to one folder (default results/gpu-check); the
# summary, one line a step and one a run, to stdout and to summary.txt there. Exit status 1 when
# a step failed.
# --dry-run BIN_DIR: no build, tiny sizes and short steps on BIN_DIR; `make test` runs it on
# bin/emulate (the emulated GPU) to check this script's own logic.
# Usage: bash tests/gpu_check.sh [--dry-run BIN_DIR] [--out DIR]
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

bin=bin
dry=0
out=results/gpu-check
while (($#)); do
  case $1 in
    --dry-run) dry=1 bin=${2:?--dry-run needs the build folder, e.g. bin/emulate}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    *) echo "gpu_check: error: unknown argument '$1' (usage: [--dry-run BIN_DIR] [--out DIR])" >&2
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

# step NAME LOG COMMAND...: runs COMMAND with its output in $out/LOG, one summary line with its
# time; a failure is counted and its last line shown.
step() {
  local name=$1 log=$out/$2 start status=0
  shift 2
  start=$(date +%s%N)
  "$@" >"$log" 2>&1 || status=$?
  local tenths=$((($(date +%s%N) - start) / 100000000))
  local seconds=$((tenths / 10)).$((tenths % 10))
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
  kernels_model=("${model[@]}")
  iters=(--iters 4 --warmup 1)
  min_time=0.002
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
  step "build for sm_$arch" build.log make -j"$(nproc)" CUDA=1 CUDA_ARCHS="$arch" all
  model=(--config inputs/tutorial.json)
  llama=(--config inputs/llama-2-7b.json)
  # bench_kernels takes the model's sizes as options, not a --config: the tutorial's, from it.
  mapfile -t kernels_model < <("$python" -c 'import json, sys
c = json.load(open(sys.argv[1]))
for k in ("hidden", "layers", "ffn-mult", "ffn-hidden", "image-size", "batch"):
    if k in c: print(f"--{k}"); print(c[k])' inputs/tutorial.json)
  iters=(--iters 20 --warmup 5)
  min_time=0.05
fi
run=(--device cuda --print-every 0 --eval-samples 64 --machine "$machine")

# 1. The CUDA kernels against their CPU twins.
filter='*Cuda*:*Gpu*:Gemm16bit.*:RoundedUpdate.*'
step "CUDA kernels against the CPU (unit tests $filter)" unit_tests.log \
  "$bin/unit_tests" --gtest_filter="$filter"

# 2. Every scheme's --verify on the GPU; the dry run's emulated GPU runs them in make test.
if ((dry)); then
  step "serial --device cuda --verify" verify.log "$bin/serial" "${model[@]}" "${iters[@]}" \
    "${run[@]}" --verify --out "$out/verify.h5"
else
  step "every scheme's --device cuda --verify (tests/emulated_gpu_tests.sh bin)" verify.log \
    bash tests/emulated_gpu_tests.sh bin
fi

# 3. fp32 GEMMs at the tutorial's shapes.
step "bench_kernels' GEMMs on the GPU" bench_kernels.log "$bin/bench_kernels" --backends cuda \
  "${kernels_model[@]}" --benchmark_filter='^gemm/cuda/f32/' --benchmark_min_time="$min_time" \
  --benchmark_out="$out/kernels.json" --benchmark_out_format=json

# 4. Serial steps in each precision, measured against predicted.
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

# 5. The pipeline's bubble with 4 stages, a core per rank.
step "pipeline 1f1b, 4 stages, 8 micro-batches" pipeline.log \
  env OPENBLAS_NUM_THREADS=1 mpiexec -n 4 "$bin/pipeline" "${model[@]}" "${iters[@]}" \
  "${run[@]}" --comm mpi --pp 4 --micro-batches 8 --schedule 1f1b --out "$out/pipeline-1f1b.h5"
grep -h 'bubble fraction' "$out/pipeline.log" | head -n 1 | sed 's/^ */       /' | tee -a "$summary"

say ""
if "$python" tests/gpu_check_summary.py "$out"/*.h5 2>&1 | tee -a "$summary"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  say "FAILED the summary of the result files (a file unreadable, or a verification failed)"
fi
say "gpu-check: $passed passed, $failed failed (steps; everything is in $out)"
((failed == 0))
