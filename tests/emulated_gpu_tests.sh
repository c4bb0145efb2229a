#!/usr/bin/env bash
# The CUDA backend of every executable, run on the CPU by the emulated-GPU build (bin/emulate,
# `make CUDA=emulate`): `--device cuda --verify` must print PASS against serial for serial,
# data (ZeRO 0-3), pipeline (GPipe, 1F1B), tensor1d, tensor2d and tensor3d at 1-4 ranks, in
# fp64 and fp32 over MPI (--comm mpi) and in fp32 over the NCCL stand-in (--comm nccl; its fp64
# datatype by DDP on 1 rank and ZeRO-1 on 3, every collective ZeRO-1 uses), once each in
# bf16 and fp16 with --checkpoint-activations (and data, pipeline and tensor1d without it; every
# scheme trains them in typed 16-bit storage), and in fp32 with --math tf32;
# pipeline's interleaved, ZB-H1 and ZB-V over both (and NCCL's refusal of ZB-V with more
# micro-batches than stages, whose transfers it cannot order). Each run must also have
# used what it was asked for: the result file records device cuda, the communicator backend
# (none for bin/serial) and the GEMMs' math (gemm_math). bin/bench_comm checks every collective
# on device buffers over both backends.
# Usage: bash tests/emulated_gpu_tests.sh [BIN_DIR] (default bin/emulate; on a machine with
# GPUs, `bin` runs the same checks on them).
# Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

bin=${1:-bin/emulate}

if [[ ! -x $bin/serial ]]; then
  not_ok "emulated build" "$bin/serial not found (make CUDA=emulate HIP_CPU_HOME=...)"
  finish
fi

# On a machine with real GPUs (BIN_DIR a CUDA build), NCCL needs one GPU per rank: runs with more
# ranks than GPUs are skipped, saying so. The emulated build's NCCL stand-in has no such limit.
gpus=1000000
if [[ $bin != */emulate ]] && command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi -L | grep -c '^GPU')
fi
# nccl_fits COMM RANKS: false (after a visible skip of NAME) when NCCL would need more GPUs.
nccl_fits() {
  [[ $1 != nccl ]] || (($2 <= gpus)) && return 0
  skip "$3" "NCCL needs one GPU per rank, and this machine has $gpus"
  return 1
}

tiny=(--hidden 24 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 4 --warmup 1
      --print-every 0 --eval-samples 24)
n=0

# $1 ranks, $2 comm backend (mpi|nccl, or none for bin/serial), $3 executable, then its options.
check() {
  local ranks=$1 comm=$2 exe=$3
  shift 3
  n=$((n + 1))
  local name="$exe -n $ranks --comm $comm $*" out=$tmp/run-$n.h5 log=$tmp/log-$n
  nccl_fits "$comm" "$ranks" "$name" || return
  local comm_option=(--comm "$comm")
  [[ $comm == none ]] && comm_option=()
  run_verified "$name" 300 "$log" "$ranks" "$bin/$exe" "${tiny[@]}" --device cuda \
    "${comm_option[@]}" "$@" --verify --out "$out" || return
  # The GEMMs' math the options ask for: --math tf32, else the precision's (fp32 by default).
  local math=fp32 args=" $* "
  [[ $args =~ " --precision "(fp64|bf16|fp16)" " ]] && math=${BASH_REMATCH[1]}
  [[ $args == *" --math tf32 "* ]] && math=tf32
  local used
  used=$("$python" -c 'import h5py, sys
f = h5py.File(sys.argv[1], "r")
print(f.attrs["device"], f.attrs["comm"], f.attrs["gemm_math"])' "$out" 2>&1)
  if [[ $used != "cuda $comm $math" ]]; then
    not_ok "$name" "result file says device/comm/gemm_math '$used', not 'cuda $comm $math'"
    return
  fi
  ok "$name ($(verify_figure "$log"))"
}

# The serial reference has no communicator.
for precision in fp64 fp32; do
  check 1 none serial --precision "$precision"
done
# TF32 tensor cores: verified against a serial fp32 replay whose GEMM inputs are TF32-rounded.
check 1 none serial --precision fp32 --math tf32
check 2 mpi data --zero 1 --precision fp32 --math tf32
for precision in bf16 fp16; do
  check 1 none serial --precision "$precision" --checkpoint-activations
done

for comm in mpi nccl; do
  # fp64 over NCCL only below (make test's time): the schemes' code is the same over both.
  precisions=(fp64 fp32)
  [[ $comm == nccl ]] && precisions=(fp32)
  for precision in "${precisions[@]}"; do
    check 2 "$comm" data --zero 0 --precision "$precision"
    check 3 "$comm" data --zero 1 --precision "$precision"
    check 4 "$comm" data --zero 2 --precision "$precision"
    check 2 "$comm" data --zero 3 --precision "$precision"
    check 2 "$comm" pipeline --pp 2 --schedule gpipe --precision "$precision"
    check 4 "$comm" pipeline --pp 2 --dp 2 --schedule 1f1b --micro-batches 3 \
      --precision "$precision"
    check 2 "$comm" tensor1d --tp 2 --precision "$precision"
    check 4 "$comm" tensor2d --tp-dims 2,2 --precision "$precision"
    check 4 "$comm" tensor3d --tp-dims 2,1,2 --precision "$precision"
  done
  # Typed 16-bit storage: 16-bit values gathered (data), sent between stages (pipeline) and
  # all-gathered and reduce-scattered over tp (tensor1d) as they are.
  check 2 "$comm" data --zero 1 --precision bf16
  check 3 "$comm" data --zero 2 --precision fp16
  check 2 "$comm" pipeline --pp 2 --schedule gpipe --precision bf16
  check 2 "$comm" tensor1d --tp 2 --sequence-parallel --precision fp16
  for precision in bf16 fp16; do
    check 2 "$comm" data --zero 3 --precision "$precision" --checkpoint-activations
    check 3 "$comm" pipeline --pp 3 --schedule 1f1b --micro-batches 3 --layers 3 \
      --precision "$precision" --checkpoint-activations
    check 4 "$comm" tensor1d --tp 2 --dp 2 --precision "$precision" --checkpoint-activations
    check 4 "$comm" tensor2d --tp-dims 2,2 --precision "$precision" --checkpoint-activations
    check 4 "$comm" tensor3d --tp-dims 2,2,1 --precision "$precision" --checkpoint-activations
  done
done
check 1 nccl data --zero 0 --precision fp64
check 3 nccl data --zero 1 --precision fp64
# The chunked and split-backward pipeline schedules; NCCL matches point-to-point calls in call
# order, which carries them where each link's transfers are wanted in the order they are sent.
for comm in mpi nccl; do
  for precision in fp64 fp32; do
    check 2 "$comm" pipeline --pp 2 --schedule interleaved --virtual-stages 2 \
      --micro-batches 4 --layers 4 --precision "$precision"
    check 2 "$comm" pipeline --pp 2 --schedule zb-h1 --micro-batches 4 --precision "$precision"
  done
  check 2 "$comm" pipeline --pp 2 --schedule zb-v --micro-batches 2 --layers 4 --precision fp64
done
check 2 mpi pipeline --pp 2 --schedule zb-v --micro-batches 4 --layers 4 --precision fp32
check 2 mpi pipeline --pp 2 --schedule zb-v --micro-batches 2 --layers 4 --precision bf16 \
  --checkpoint-activations
nccl_fits nccl 2 "pipeline --schedule zb-v --micro-batches 4 on --comm nccl" &&
  expect_refusal "pipeline --schedule zb-v --micro-batches 4 on --comm nccl" 2 \
  "NCCL's untagged point-to-point" "$bin/pipeline" "${tiny[@]}" --layers 4 --device cuda \
  --comm nccl --schedule zb-v --micro-batches 4

# bin/bench_comm on device buffers: every collective's result checked element by element.
for comm in mpi nccl; do
  log=$tmp/bench-comm-$comm
  name="bench_comm -n 3 --device cuda --comm $comm"
  nccl_fits "$comm" 3 "$name" || continue
  if timeout 300 mpiexec -n 3 "$bin/bench_comm" --device cuda --comm "$comm" -b 8 -e 64K -f 8 \
       -n 2 -w 1 --out "$tmp/comm-$comm.h5" >"$log" 2>&1 &&
     grep -q "Out of bounds values : 0 OK" "$log"; then
    ok "$name: 0 wrong elements"
  else
    not_ok "$name" "$(tail -n 2 "$log" | tr '\n' ' ')"
  fi
done

finish
