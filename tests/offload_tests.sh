#!/usr/bin/env bash
# bin/data --offload optimizer (ZeRO-Offload): on the CPU backend to a scratch file per rank
# (--offload-to disk:DIR), on the emulated GPU to host memory and to disk. ZeRO 1, 2 and 3 at 1-4
# ranks, and ZeRO-3 with its parameters offloaded too (--offload optimizer+params), match serial
# in fp64 (--verify), an offloaded fp32 or bf16 run trains bit for bit as the
# same run in memory, a model that a cgroup memory limit refuses in memory trains offloaded with
# its ranks' peak resident memory under the limit, a full disk and a SIGTERM leave no file
# behind, and bad flags are one line on every rank. The scratch folder must be empty after every
# run. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

dir=$tmp/offload
mkdir -p "$dir"
tiny=(--hidden 24 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 4 --warmup 1
      --print-every 0 --eval-samples 24 --data synthetic)
offload=(--offload optimizer --offload-to "disk:$dir")
# left_behind: what a run left in the scratch folder (nothing, or the names).
left_behind() { ls -A "$dir" | tr '\n' ' '; }

expect_refusal "--offload without --offload-to" 2 "on the CPU backend needs --offload-to disk:DIR" \
  bin/data "${tiny[@]}" --zero 1 --offload optimizer --out "$tmp/refused.h5"
expect_refusal "--offload-to host on the CPU backend" 2 "needs --offload-to disk:DIR" \
  bin/data "${tiny[@]}" --zero 1 --offload optimizer --offload-to host --out "$tmp/refused.h5"
expect_refusal "--offload with --zero 0" 2 "--offload optimizer needs --zero 1, 2 or 3" \
  bin/data "${tiny[@]}" --zero 0 "${offload[@]}" --out "$tmp/refused.h5"
expect_refusal "--offload-to a folder that is not there" 2 "disk:$tmp/none: no such directory" \
  bin/data "${tiny[@]}" --zero 1 --offload optimizer --offload-to "disk:$tmp/none" \
  --out "$tmp/refused.h5"
expect_refusal "--offload optimizer+params with --zero 2" 2 "optimizer+params needs --zero 3" \
  bin/data "${tiny[@]}" --zero 2 --offload optimizer+params --offload-to "disk:$dir" \
  --out "$tmp/refused.h5"
expect_refusal "--offload-to without --offload" 2 "needs --offload optimizer" \
  bin/data "${tiny[@]}" --zero 1 --offload-to "disk:$dir" --out "$tmp/refused.h5"

# verified NAME RANKS ROW COMMAND...: COMMAND in fp64 with --verify matches serial, leaves the
# scratch folder empty, and prints ROW (a pattern) where it says where the state went.
verified() {
  local name=$1 ranks=$2 row=$3
  shift 3
  run_verified "$name" 120 "$tmp/log" "$ranks" "$@" --precision fp64 --verify \
    --out "$tmp/fp64.h5" || return
  if [[ -n $(left_behind) ]]; then
    not_ok "$name" "left in the scratch folder: $(left_behind)"
  elif ! grep -q "$row" "$tmp/log"; then
    not_ok "$name" "no '$row' in its output: $(grep -A9 '^summary' "$tmp/log" | tr '\n' '|')"
  else
    ok "$name matches serial ($(verify_figure "$tmp/log")), folder empty after"
  fi
}

# fp64: every stage at every rank count matches serial, and leaves the folder empty.
for ranks in 1 2 3 4; do
  for zero in 1 2 3; do
    verified "ZeRO-$zero offloaded on $ranks rank$( ((ranks > 1)) && echo s)" "$ranks" \
      "of state on disk" bin/data "${tiny[@]}" --zero "$zero" "${offload[@]}"
  done
done

# ZeRO-Infinity's parameters too: each unit's shard read back from the file before its gather.
for ranks in 1 2 3 4; do
  verified "ZeRO-3 with its parameters offloaded on $ranks rank$( ((ranks > 1)) && echo s)" \
    "$ranks" '^  param fetch ' bin/data "${tiny[@]}" --zero 3 --offload optimizer+params \
    --offload-to "disk:$dir"
done

# Bit for bit: the same run with its state in memory and offloaded (losses of every iteration,
# and --verify's largest error against serial fp64 over the losses and final weights); with
# run_bin (bin/data) and offloaded (the flags that offload).
run_bin=bin/data
offloaded=("${offload[@]}")
same_run() { # NAME RANKS FLAGS...
  local name=$1 ranks=$2 mode
  shift 2
  if ((!have_h5py)); then
    skip "$name" "h5py not available in .venv"
    return
  fi
  for mode in memory disk; do
    local extra=()
    [[ $mode == disk ]] && extra=("${offloaded[@]}")
    if ! timeout 120 mpiexec -n "$ranks" "$run_bin" "${tiny[@]}" "$@" "${extra[@]}" --verify \
      --out "$tmp/$mode.h5" >"$tmp/$mode.log" 2>&1; then
      not_ok "$name" "the $mode run failed: $(tail -n 2 "$tmp/$mode.log" | tr '\n' ' ')"
      return
    fi
  done
  expect_output "$name" "$python" - "$tmp/memory.h5" "$tmp/disk.h5" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p) for p in sys.argv[1:])
loss_a, loss_b = a["train/loss"][()], b["train/loss"][()]
err_a, err_b = (f["verification"].attrs["max_relative_error"] for f in (a, b))
if not np.array_equal(loss_a, loss_b) or err_a != err_b:
    sys.exit(f"differ: losses {loss_a} vs {loss_b}, largest verify error {err_a} vs {err_b}")
if "offload=disk" in b.attrs["grid"] and (min(b["memory/disk_bytes"][()]) <= 0 or max(a["memory/disk_bytes"][()]) != 0):
    sys.exit(f"disk bytes {a['memory/disk_bytes'][()]} in memory, {b['memory/disk_bytes'][()]} offloaded")
if "offload=" not in b.attrs["grid"] or "offload=" in a.attrs["grid"]:
    sys.exit(f"grids {a.attrs['grid']} / {b.attrs['grid']}")
print(f"{len(loss_a)} losses equal bit for bit, the same largest error against serial fp64 "
      f"({err_a:.6g}); grids {a.attrs['grid']} / {b.attrs['grid']}")
PY
}
for zero in 1 2 3; do same_run "fp32 ZeRO-$zero on 2 ranks, in memory and offloaded" 2 --zero "$zero"; done
same_run "bf16 ZeRO-2 on 2 ranks, in memory and offloaded" 2 --zero 2 --precision bf16
offloaded=(--offload optimizer+params --offload-to "disk:$dir")
same_run "fp32 ZeRO-3 on 3 ranks, in memory and with its parameters offloaded" 3 --zero 3
same_run "bf16 ZeRO-3 on 2 ranks, in memory and with its parameters offloaded" 2 --zero 3 \
  --precision bf16
offloaded=("${offload[@]}")

# What the summary and the result file say of the file: the offload wait row, its table.
if ! grep -q '^  offload wait .*read and written, .* GB/s over the update' "$tmp/disk.log"; then
  not_ok "the summary's offload wait row" "$(grep -A8 '^summary' "$tmp/disk.log" | tr '\n' '|')"
elif ((have_h5py)) && ! "$python" -c 'import sys, h5py; t = h5py.File(sys.argv[1])["timing/offload_wait"]; sys.exit(t.shape[1] != 2)' "$tmp/disk.h5"; then
  not_ok "/timing/offload_wait" "missing, or not one column a rank, in $tmp/disk.h5"
else
  ok "the summary's offload wait row: $(grep -o '^  offload wait.*' "$tmp/disk.log" | tr -s ' ')"
fi

# bench_kernels times the same file in the same folder, and leaves nothing there.
if timeout 120 bin/bench_kernels --backends cpu --offload-dir "$dir" --benchmark_filter=offload \
  --benchmark_min_time=0.01 >"$tmp/bench.log" 2>&1 &&
  (($(grep -cE '^offload_(write|read|adam)/disk/f32/mb:64.*GB/s=' "$tmp/bench.log") == 3)) &&
  [[ -z $(left_behind) ]]; then
  ok "bench_kernels --offload-dir: $(grep -oE '^offload_[a-z]+|GB/s=[0-9.]+' "$tmp/bench.log" | paste -sd' ')"
else
  not_ok "bench_kernels --offload-dir" "$(tail -n 3 "$tmp/bench.log" | tr '\n' ' ') left: $(left_behind)"
fi

# The run's own prediction prices the offloaded update at the description's offload_bandwidth:
# 2 x the state on disk (read, then written) over the rank's share of it, here a slow 1 MB/s
# so that it dominates (a GPU node's description: its ranks do not share host rates).
if ((have_h5py)); then
  "$python" - inputs/machines/h100-cluster.json "$tmp/slow-disk.json" <<'PY'
import json, sys
machine = json.load(open(sys.argv[1]))
machine["offload_bandwidth"] = {"value": 1e6, "source": "tests/offload_tests.sh"}
json.dump(machine, open(sys.argv[2], "w"))
PY
  for mode in memory disk; do
    extra=()
    [[ $mode == disk ]] && extra=("${offload[@]}")
    timeout 120 mpiexec -n 2 bin/data "${tiny[@]}" --zero 2 "${extra[@]}" \
      --machine "$tmp/slow-disk.json" --out "$tmp/priced-$mode.h5" >"$tmp/priced-$mode.log" 2>&1
  done
  expect_output "the prediction of an offloaded run" "$python" - "$tmp/priced-memory.h5" \
    "$tmp/priced-disk.h5" <<'PY'
import sys, h5py
memory, disk = (h5py.File(p) for p in sys.argv[1:])
state = float(max(disk["memory/disk_bytes"][()]))
predicted = float(disk["prediction"].attrs["optimizer_seconds"])
in_memory = float(memory["prediction"].attrs["optimizer_seconds"])
if state <= 0 or abs(predicted - 2 * state / 1e6) > 1e-9 * predicted or in_memory >= predicted:
    sys.exit(f"optimizer_seconds {predicted} offloaded ({state} B on disk), {in_memory} in memory")
print(f"the update predicted at {predicted * 1e3:.3f} ms = 2 x {state:.0f} B at 1 MB/s "
      f"(in memory: {in_memory * 1e9:.1f} ns)")
PY
else
  skip "the prediction of an offloaded run" "h5py not available in .venv"
fi

# A memory limit (a cgroup of this test's own): the model's state does not fit in memory, and
# fits with the optimizer state on disk. 77 M parameters with Adam: about 1.72 GiB in memory
# under ZeRO-1 on one rank, 1.17 GiB offloaded; the limit 1600 MiB. The resident set counts the
# pages of shared libraries too, which the limit may not (they can be charged to whoever loaded
# them first): about 30 MiB beyond the accounting in a CPU build, 180 MiB with CUDA's libraries.
big=(--hidden 1536 --layers 4 --image-size 28 --batch 32 --iters 3 --warmup 1 --print-every 0
     --data synthetic --zero 1)
limit=$((1600 * 1024 * 1024))
cgroup_setup() { # prints the cgroup's folder, or why there is none
  if ((EUID != 0)); then
    echo "needs root (a cgroup of its own)"
  elif [[ -w /sys/fs/cgroup/memory && -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]]; then
    local cg=/sys/fs/cgroup/memory/mlpscale-offload-$$
    mkdir -p "$cg" && echo "$limit" >"$cg/memory.limit_in_bytes" && echo "$cg"
  elif grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    local cg=/sys/fs/cgroup/mlpscale-offload-$$
    mkdir -p "$cg" && echo "$limit" >"$cg/memory.max" && echo "$cg"
  else
    echo "no writable cgroup memory controller (v1 /sys/fs/cgroup/memory, or v2 with memory delegated)"
  fi
}
cgroup=$(cgroup_setup)
if [[ $cgroup != /sys/fs/cgroup/* ]]; then
  skip "a model over a cgroup memory limit trains offloaded" "$cgroup"
else
  in_cgroup() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup" "$@"; }
  in_cgroup timeout 120 mpiexec -n 1 bin/data "${big[@]}" --out "$tmp/big-memory.h5" \
    >"$tmp/big-memory.log" 2>&1
  memory_status=$?
  in_cgroup timeout 300 mpiexec -n 1 bin/data "${big[@]}" "${offload[@]}" \
    --out "$tmp/big-disk.h5" >"$tmp/big-disk.log" 2>&1
  disk_status=$?
  if ((memory_status != 2)) || ! grep -q "would fit it, moving" "$tmp/big-memory.log"; then
    not_ok "in memory under a 1600 MiB limit" "exit status $memory_status, expected the memory check to refuse it naming --offload: $(tail -n 1 "$tmp/big-memory.log")"
  else
    ok "in memory under a 1600 MiB cgroup limit, refused: $(grep -o 'needs about [^(]*' "$tmp/big-memory.log")naming --offload optimizer"
  fi
  if ((disk_status != 0)); then
    not_ok "offloaded under a 1600 MiB limit" "exit status $disk_status: $(tail -n 2 "$tmp/big-disk.log" | tr '\n' ' ')"
  elif ((!have_h5py)); then
    skip "offloaded under a 1600 MiB limit: peak resident memory" "h5py not available in .venv"
  else
    expect_output "offloaded under a 1600 MiB cgroup limit, trained" "$python" - "$tmp/big-disk.h5" "$limit" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1])
limit = int(sys.argv[2])
rss, disk = int(f["memory/peak_rss_bytes"][0]), int(f["memory/disk_bytes"][0])
if not rss or rss >= limit or disk <= 0:
    sys.exit(f"peak resident {rss / 2**20:.0f} MiB (limit {limit / 2**20:.0f} MiB), on disk {disk}")
print(f"peak resident {rss / 2**20:.0f} MiB under the {limit / 2**20:.0f} MiB limit, "
      f"{disk / 2**20:.0f} MiB of optimizer state on disk")
PY
  fi
  [[ -n $(left_behind) ]] && not_ok "the limit's runs" "left in the scratch folder: $(left_behind)"
  rmdir "$cgroup" 2>/dev/null
fi

# A full disk: a 1 MiB file system for 2.4 MB of state per rank.
small=(--hidden 256 --layers 2 --image-size 28 --batch 16 --iters 3 --warmup 1 --print-every 0
       --data synthetic --zero 1)
full=$tmp/full
mkdir -p "$full"
if ((EUID != 0)) || ! mount -t tmpfs -o size=1m mlpscale-full "$full" 2>"$tmp/mount.err"; then
  skip "a full disk" "cannot mount a small tmpfs ($( ((EUID != 0)) && echo "needs root" || cat "$tmp/mount.err"))"
else
  expect_refusal "a full disk" 2 "No space left on device" \
    bin/data "${small[@]}" --offload optimizer --offload-to "disk:$full" --out "$tmp/refused.h5"
  if [[ -n $(ls -A "$full") ]]; then
    not_ok "a full disk leaves nothing" "left: $(ls -A "$full" | tr '\n' ' ')"
  else
    ok "a full disk leaves no file behind"
  fi
  umount "$full"
fi

# The emulated GPU (make CUDA=emulate): ZeRO-Offload proper, the state in host memory (the
# default on a GPU) or on disk, updated by the CPU's kernel, gradients and values crossing on the
# copy stream. The GPU's and the CPU's Adam compute the same expression with contraction off, so
# the offloaded runs equal the GPU's own bit for bit.
gpu_bin=bin/emulate/data
if [[ ! -x $gpu_bin ]]; then
  skip "the emulated GPU's offload" "$gpu_bin not built (make CUDA=emulate needs HIP-CPU)"
else
  gpu=(--device cuda)
  expect_refusal "--offload-to elsewhere on a GPU" 2 "--offload-to nvme: expected host or disk:DIR" \
    "$gpu_bin" "${tiny[@]}" "${gpu[@]}" --zero 1 --offload optimizer --offload-to nvme \
    --out "$tmp/refused.h5"
  for ranks in 1 2 3 4; do
    for zero in 1 2 3; do
      for tier in host disk; do
        # Disk at 1 and 4 ranks (make test's time): its exchange is the host tier's, its file
        # the CPU's, both at every rank count above.
        [[ $tier == disk ]] && ((ranks == 2 || ranks == 3)) && continue
        to=host
        [[ $tier == disk ]] && to=disk:$dir
        verified "emulated GPU, ZeRO-$zero offloaded to $tier on $ranks rank$( ((ranks > 1)) && echo s)" \
          "$ranks" '^  host update ' "$gpu_bin" "${tiny[@]}" "${gpu[@]}" --zero "$zero" \
          --offload optimizer --offload-to "$to"
      done
    done
  done
  run_bin=$gpu_bin
  offloaded=("${gpu[@]}" --offload optimizer)
  for zero in 1 2 3; do
    same_run "emulated GPU, fp32 ZeRO-$zero on 2 ranks, on the GPU and offloaded to host" 2 \
      "${gpu[@]}" --zero "$zero"
  done
  same_run "emulated GPU, bf16 ZeRO-3 on 2 ranks, on the GPU and offloaded to host" 2 \
    "${gpu[@]}" --zero 3 --precision bf16
  # The parameters too (ZeRO-Infinity): verified at 1-4 ranks in host memory, at 1 and 4 on
  # disk, and bit for bit as on the GPU.
  for ranks in 1 2 3 4; do
    for to in host disk:$dir; do
      [[ $to == disk:* ]] && ((ranks == 2 || ranks == 3)) && continue
      verified "emulated GPU, ZeRO-3 with its parameters offloaded to ${to%%:*} on $ranks rank$( ((ranks > 1)) && echo s)" \
        "$ranks" '^  param fetch ' "$gpu_bin" "${tiny[@]}" "${gpu[@]}" --zero 3 \
        --offload optimizer+params --offload-to "$to"
    done
  done
  offloaded=("${gpu[@]}" --offload optimizer+params)
  same_run "emulated GPU, fp32 ZeRO-3 on 2 ranks, on the GPU and with its parameters in host memory" \
    2 "${gpu[@]}" --zero 3
  same_run "emulated GPU, bf16 ZeRO-3 on 2 ranks, on the GPU and with its parameters in host memory" \
    2 "${gpu[@]}" --zero 3 --precision bf16
  offloaded=("${gpu[@]}" "${offload[@]}")
  same_run "emulated GPU, fp32 ZeRO-2 on 2 ranks, on the GPU and offloaded to disk" 2 \
    "${gpu[@]}" --zero 2
  if ((have_h5py)); then
    expect_output "emulated GPU: /timing/offload_wait and host_update" "$python" - "$tmp/disk.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1])
t = f["timing"]
for name in ("offload_wait", "host_update"):
    if name not in t or t[name].shape[1] != 2:
        sys.exit(f"/timing/{name} missing or not one column a rank")
host, step = t["host_update"][()], t["optimizer"][()]
if not (host > 0).all() or (host > step).any():
    sys.exit(f"host_update {host} against optimizer {step}")
print(f"host update {host[1:].mean() * 1e3:.3f} ms of the optimizer's {step[1:].mean() * 1e3:.3f} ms")
PY
  fi
  # The run's own prediction prices the host's update at host_offload_bandwidth: the shard's
  # gradients down and values up (4 + 4 bytes an element in fp32), the node's rate shared by its
  # 2 ranks, here a slow 1 MB/s.
  if ((have_h5py)); then
    "$python" - inputs/machines/h100-cluster.json "$tmp/slow-host.json" <<'PY'
import json, sys
machine = json.load(open(sys.argv[1]))
machine["host_offload_bandwidth"] = {"value": 1e6, "source": "tests/offload_tests.sh"}
json.dump(machine, open(sys.argv[2], "w"))
PY
    timeout 120 mpiexec -n 2 "$gpu_bin" "${tiny[@]}" "${gpu[@]}" --zero 2 --offload optimizer \
      --machine "$tmp/slow-host.json" --out "$tmp/priced-host.h5" >"$tmp/priced-host.log" 2>&1
    expect_output "emulated GPU: the prediction of a run offloaded to host" "$python" - \
      "$tmp/priced-host.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1])
params = int(f.attrs["parameters"])
predicted = float(f["prediction"].attrs["optimizer_seconds"])
expected = params / 2 * 8 / (1e6 / 2)
if abs(predicted - expected) > 1e-9 * expected:
    sys.exit(f"optimizer_seconds {predicted}, expected {expected} ({params} parameters)")
print(f"the update predicted at {predicted * 1e3:.3f} ms = {params // 2} x 8 B at 1 MB/s / 2 ranks")
PY
  fi
  run_bin=bin/data
  offloaded=("${offload[@]}")
fi

# SIGTERM in the middle of a run: every rank stops, and removes its file.
timeout 120 mpiexec -n 2 bin/data "${small[@]}" --iters 100000 --print-every 0 "${offload[@]}" \
  --out "$tmp/stopped.h5" >"$tmp/stopped.log" 2>&1 &
run=$!
for _ in $(seq 1 100); do
  (($(ls -A "$dir" | wc -l) == 2)) && break
  sleep 0.1
done
files=$(ls -A "$dir" | wc -l)
sleep 0.5  # into the steps
kill -TERM "$run"
wait "$run"
status=$?
if ((files != 2)); then
  not_ok "SIGTERM while offloaded" "the two ranks' files never appeared: $(tail -n 2 "$tmp/stopped.log" | tr '\n' ' ')"
elif ((status == 0 || status == 124)) || [[ -n $(left_behind) ]]; then
  not_ok "SIGTERM while offloaded" "exit status $status, left: $(left_behind)"
else
  ok "SIGTERM while offloaded: exit status $status, both ranks' files removed"
fi
finish
