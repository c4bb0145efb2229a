#!/usr/bin/env bash
# Issue 8 on bin/serial and bin/data, and every scheme's typed bf16/fp16 --verify on the CPU:
# bf16/fp16 mixed precision (loss curves near fp32's, --verify against serial in the same
# precision, 16-bit gradient traffic and --fp32-grad-comm), activation checkpointing (loss
# curves bit-identical in fp32 and fp64, lower peak memory, recompute timed) and --inference
# (forward passes equal to serial's). Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

tiny=(--hidden 24 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 6 --warmup 1
      --print-every 0 --eval-samples 24)

# run NAME RANKS PROGRAM ARGS...: runs with a timeout into $tmp/NAME.h5, log in $tmp/NAME.log;
# fails the test (and returns 1) on a non-zero exit or, with --verify, on anything but PASS.
run() {
  local name=$1 ranks=$2 program=$3 status=0
  shift 3
  timeout 120 mpiexec -n "$ranks" "$program" "$@" --out "$tmp/$name.h5" >"$tmp/$name.log" 2>&1 ||
    status=$?
  if ((status != 0)); then
    not_ok "$name" "exit status $status ($(grep -E 'verify:|rror' "$tmp/$name.log" | head -n 2 | tr '\n' ' '))"
    return 1
  fi
  if [[ " $* " == *" --verify "* ]]; then
    if ! grep -q "verify: PASS" "$tmp/$name.log"; then
      not_ok "$name" "$(grep 'verify:' "$tmp/$name.log" | head -n 1)"
      return 1
    fi
    ok "$name: $(grep -o 'verify: PASS.*tolerance there [^ ]*' "$tmp/$name.log")"
  fi
}

# h5check NAME A B CHECK [ARGS]: a named comparison of the result files A and B (h5py).
h5check() {
  local name=$1 a=$2 b=$3 why
  shift 3
  if why=$("$python" - "$tmp/$a.h5" "$tmp/$b.h5" "$@" <<'PY'
import sys
import h5py
import numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
check, args = sys.argv[3], sys.argv[4:]
la, lb = a["train/loss"][()], b["train/loss"][()]
if check == "loss_close":  # every loss of b within 2% of a's
    worst = float(np.max(np.abs(lb - la) / np.abs(la)))
    ok, detail = worst <= 0.02, f"largest relative difference {worst:.2e}, tolerance 2e-2"
elif check == "loss_equal":
    ok, detail = bool(np.array_equal(la, lb)), f"{len(la)} losses bitwise equal"
elif check == "peak_lower":
    pa, pb = a["memory/peak_bytes"][()], b["memory/peak_bytes"][()]
    ok = bool(np.all(pb < pa))
    detail = f"peak MB per rank {np.round(pa / 1e6, 3).tolist()} -> {np.round(pb / 1e6, 3).tolist()}"
elif check == "recompute_timed":
    ok = bool(np.all(b["timing/recompute"][()] > 0) and np.all(a["timing/recompute"][()] == 0))
    detail = "recompute timed only with checkpointing"
elif check == "bytes_ratio":  # KIND RATIO: b's bytes of KIND are RATIO x a's, every iteration
    kind, ratio = args[0], float(args[1])
    ba, bb = a[f"comm/{kind}/bytes"][()], b[f"comm/{kind}/bytes"][()]
    ok = bool(np.array_equal(bb, ratio * ba))
    detail = f"{kind} bytes per iteration {ba[0, 0]:.0f} -> {bb[0, 0]:.0f}"
else:
    ok, detail = False, f"unknown check {check}"
print(detail)
sys.exit(0 if ok else 1)
PY
  ); then ok "$name ($why)"; else not_ok "$name" "$why"; fi
}

# --- mixed precision --------------------------------------------------------------------------
long=(--hidden 32 --layers 2 --image-size 8 --batch 16 --iters 30 --warmup 1 --print-every 0
      --eval-samples 32)
run serial-fp32 1 bin/serial "${long[@]}" --precision fp32 &&
  run serial-bf16 1 bin/serial "${long[@]}" --precision bf16 --verify &&
  h5check "serial bf16 loss curve within 2% of fp32 over 30 iterations" serial-fp32 serial-bf16 loss_close
run serial-fp16 1 bin/serial "${long[@]}" --precision fp16 --verify &&
  h5check "serial fp16 loss curve within 2% of fp32 over 30 iterations" serial-fp32 serial-fp16 loss_close
for zero in 0 1 2 3; do
  run "data-zero$zero-bf16" 2 bin/data "${tiny[@]}" --zero $zero --precision bf16 --verify
  run "data-zero$zero-fp16" 2 bin/data "${tiny[@]}" --zero $zero --precision fp16 --verify
done
# Every other scheme's typed 16-bit training against serial (--verify) on the CPU.
for precision in bf16 fp16; do
  run "pipeline-1f1b-$precision" 2 bin/pipeline "${tiny[@]}" --pp 2 --precision $precision --verify
  run "pipeline-zbv-$precision" 2 bin/pipeline "${tiny[@]}" --pp 2 --layers 4 --schedule zb-v \
    --micro-batches 2 --precision $precision --verify
  run "tensor1d-sp-$precision" 2 bin/tensor1d "${tiny[@]}" --tp 2 --sequence-parallel \
    --precision $precision --verify
  run "tensor2d-$precision" 4 bin/tensor2d "${tiny[@]}" --tp-dims 2,2 --precision $precision --verify
  run "tensor3d-$precision" 4 bin/tensor3d "${tiny[@]}" --tp-dims 2,1,2 --precision $precision \
    --verify
done
run data-fp32 2 bin/data "${tiny[@]}" --precision fp32 &&
  run data-bf16 2 bin/data "${tiny[@]}" --precision bf16 &&
  run data-bf16-fp32comm 2 bin/data "${tiny[@]}" --precision bf16 --fp32-grad-comm && {
    h5check "DDP bf16 all-reduces 2 bytes per gradient" data-fp32 data-bf16 bytes_ratio allreduce 0.5
    h5check "DDP bf16 --fp32-grad-comm all-reduces 4 bytes per gradient" data-fp32 data-bf16-fp32comm bytes_ratio allreduce 1
  }

# Every scheme's analytic volumes price 16-bit payloads at 2 bytes (gradients at 4 with
# --fp32-grad-comm): its own table and its checker agree with what was measured.
small=(--hidden 16 --layers 2 --image-size 6 --batch 8 --iters 3 --warmup 1 --print-every 0
       --eval-samples 8)
for variant in "bf16" "fp16 --fp32-grad-comm"; do
  # shellcheck disable=SC2086
  set -- --precision $variant
  tag=${variant// /}
  # ZeRO-3 all-gathers typed 16-bit values at 2 bytes whatever the gradients' wire.
  run "data-zero3-$tag" 2 bin/data "${small[@]}" --zero 3 "$@" &&
    if grep -q DIFFERENT "$tmp/data-zero3-$tag.log"; then
      not_ok "data zero 3 $variant volumes" "$(grep DIFFERENT "$tmp/data-zero3-$tag.log" | tr -s ' ' | tr '\n' ';')"
    else ok "data zero 3 $variant volumes: analytic == measured"; fi
  run "tensor1d-$tag" 4 bin/tensor1d "${small[@]}" --tp 2 --dp 2 "$@" &&
    if grep -q DIFFERENT "$tmp/tensor1d-$tag.log"; then
      not_ok "tensor1d $variant volumes" "$(grep DIFFERENT "$tmp/tensor1d-$tag.log" | tr -s ' ' | tr '\n' ';')"
    else ok "tensor1d $variant volumes: analytic == measured"; fi
  run "tensor2d-$tag" 4 bin/tensor2d "${small[@]}" --tp-dims 1,1 --dp 4 "$@" &&
    run "tensor2d-q2-$tag" 4 bin/tensor2d "${small[@]}" --tp-dims 2,2 "$@" &&
    for f in "tensor2d-$tag" "tensor2d-q2-$tag"; do
      if why=$("$python" tests/check_tensor2d_volumes.py "$tmp/$f.h5" 2>&1); then ok "$f volumes: $why"
      else not_ok "$f volumes" "$why"; fi
    done
  run "tensor3d-$tag" 4 bin/tensor3d "${small[@]}" --tp-dims 2,1,1 --dp 2 "$@" &&
    if why=$("$python" tests/check_tensor3d_volumes.py "$tmp/tensor3d-$tag.h5" 2>&1); then
      ok "tensor3d $variant volumes: $(tail -n 1 <<<"$why")"
    else not_ok "tensor3d $variant volumes" "$why"; fi
  run "pipeline-$tag" 4 bin/pipeline "${small[@]}" --pp 2 --dp 2 "$@" &&
    if why=$("$python" tests/check_pipeline_result.py "$tmp/pipeline-$tag.h5" 2>&1); then
      ok "pipeline $variant volumes: $why"
    else not_ok "pipeline $variant volumes" "$why"; fi
done

# --- activation checkpointing ----------------------------------------------------------------
wide=(--hidden 64 --layers 4 --image-size 6 --batch 64 --iters 4 --warmup 1 --print-every 0
      --eval-samples 64)
for precision in fp32 fp64; do
  run "serial-$precision-stored" 1 bin/serial "${wide[@]}" --precision $precision &&
    run "serial-$precision-checkpointed" 1 bin/serial "${wide[@]}" --precision $precision \
      --checkpoint-activations && {
      h5check "serial $precision checkpointing: loss curve bit-identical" "serial-$precision-stored" "serial-$precision-checkpointed" loss_equal
      h5check "serial $precision checkpointing: lower peak memory" "serial-$precision-stored" "serial-$precision-checkpointed" peak_lower
      h5check "serial $precision checkpointing: recompute timed" "serial-$precision-stored" "serial-$precision-checkpointed" recompute_timed
    }
  for zero in 0 2 3; do
    name="data-zero$zero-$precision"
    run "$name-stored" 2 bin/data "${wide[@]}" --zero $zero --precision $precision &&
      run "$name-checkpointed" 2 bin/data "${wide[@]}" --zero $zero --precision $precision \
        --checkpoint-activations && {
        h5check "data zero $zero $precision checkpointing: loss curve bit-identical" "$name-stored" "$name-checkpointed" loss_equal
        h5check "data zero $zero $precision checkpointing: lower peak memory" "$name-stored" "$name-checkpointed" peak_lower
      }
  done
done
run serial-checkpoint-verify 1 bin/serial "${tiny[@]}" --precision fp64 --checkpoint-activations --verify
run data-checkpoint-verify 3 bin/data "${tiny[@]}" --zero 3 --precision fp64 --checkpoint-activations --verify

# --- inference --------------------------------------------------------------------------------
run serial-inference 1 bin/serial "${tiny[@]}" --precision fp64 --inference --verify
run serial-inference-bf16 1 bin/serial "${tiny[@]}" --precision bf16 --inference --verify
for zero in 0 3; do
  run "data-zero$zero-inference" 3 bin/data "${tiny[@]}" --zero $zero --precision fp64 --inference --verify
done
if run serial-inference-file 1 bin/serial "${tiny[@]}" --precision fp64 --inference; then
  if "$python" - "$tmp/serial-inference-file.h5" <<'PY'
import sys
import h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["mode"] == "inference", f.attrs["mode"]
assert f["train/loss"].shape == (6,) and f["timing/step"].shape == (6, 1)
assert float(f["timing/backward"][()].max()) == 0.0 and float(f["timing/optimizer"][()].max()) == 0.0
assert f.attrs["flops_per_sample"] == 2 * f.attrs["parameters"]
PY
  then ok "inference result file: mode, one row per batch, no backward or optimizer time, 2 x parameters flops"
  else not_ok "inference result file" "attributes or shapes wrong"
  fi
fi

# --- bad combinations -------------------------------------------------------------------------
expect_refusal() {
  local name=$1 pattern=$2 status=0
  shift 2
  timeout 60 mpiexec -n 2 bin/data "${tiny[@]}" "$@" --out "$tmp/refused.h5" >"$tmp/refused.log" 2>&1 ||
    status=$?
  if ((status == 2)) && (($(grep -c -- "$pattern" "$tmp/refused.log") == 2)) && [[ ! -e $tmp/refused.h5 ]]; then
    ok "$name refused on every rank: $(head -n 1 "$tmp/refused.log")"
  else
    not_ok "$name" "status $status: $(head -n 2 "$tmp/refused.log" | tr '\n' ' ')"
  fi
}
expect_refusal "--fp32-grad-comm with fp32" "needs --precision bf16 or fp16" --fp32-grad-comm
expect_refusal "--inference with a batch larger than the test split" "exceeds the 24 test samples" \
  --inference --batch 48

finish
