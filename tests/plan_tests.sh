#!/usr/bin/env bash
# bin/plan (docs/planning.md): it ranks the configurations of a model on N ranks of a machine
# description; every configuration it offers is a grid its executable accepts (checked with that
# executable's --check-grid dry run); --json holds every row; --explain breaks one down; bad
# input is refused in one line. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

h100=inputs/machines/h100-cluster.json
model=(--hidden 64 --layers 4 --image-size 8 --batch 32)

if ! bin/plan "${model[@]}" --world 4 --machine "$h100" --top 1000 --precisions fp32,bf16 \
    --json "$tmp/plan.json" --explain 1 >"$tmp/plan.out" 2>"$tmp/plan.err"; then
  not_ok "plan runs" "$(head -c 400 "$tmp/plan.err")"
  finish
fi
ok "plan ranks the configurations of 4 ranks"

# The table's count, the JSON's rows and the table's rows agree, fastest first among those that fit.
verdict=$("$python" - "$tmp/plan.json" "$tmp/plan.out" <<'PY'
import json, re, sys
plan = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
rows = plan["candidates"]
stated = int(re.search(r"^(\d+) configurations", text, re.M).group(1))
table = re.findall(r"^ +\d+ +[\d.]+ ", text, re.M)
problems = []
if not (stated == len(rows) == len(table)):
    problems.append(f"counts: stated {stated}, json {len(rows)}, table {len(table)}")
fit = [r["step_seconds"] for r in rows if r["fits"]]
if fit != sorted(fit):
    problems.append("fitting rows not ordered by step")
schemes = {r["scheme"] for r in rows}
if schemes != {"data", "pipeline", "tensor1d", "tensor2d", "tensor3d"}:
    problems.append(f"schemes {sorted(schemes)}")
if {r["precision"] for r in rows} != {"fp32", "bf16"}:
    problems.append("not both precisions")
for r in rows:
    parts = r["gemm_seconds"] + r["weights_from_memory_seconds"] + r["elementwise_seconds"] + \
        r["optimizer_seconds"] + r["bubble_seconds"] + r["exposed_comm_seconds"] + \
        r["data_loading_seconds"]
    if abs(parts - r["step_seconds"]) > 1e-12 * max(1, r["step_seconds"]):
        problems.append(f"{r['label']}: phases {parts} != step {r['step_seconds']}")
        break
    # The send-buffer copies are inside the reduce-scatter's call: exposed communication.
    if r["send_buffer_copies_seconds"] > r["exposed_comm_seconds"] + 1e-15:
        problems.append(f"{r['label']}: copies outside the exposed communication")
        break
print("; ".join(problems) or f"{len(rows)} rows, {len(schemes)} schemes, phases sum to the step")
sys.exit(1 if problems else 0)
PY
)
[[ $? == 0 ]] && ok "table and --json agree: $verdict" || not_ok "table and --json" "$verdict"

if grep -q "^  run it: mpiexec -n 4 bin/" "$tmp/plan.out" &&
    grep -q "^  memory .* per rank" "$tmp/plan.out"; then
  ok "--explain 1 gives the command and the memory"
else
  not_ok "--explain 1" "$(grep -A3 '^#1' "$tmp/plan.out" | tr '\n' '|')"
fi

# The command --explain gives runs the planned model: its dry run prints the plan's model.
read -r -a run_it < <(sed -n 's/^  run it: mpiexec -n 4 //p' "$tmp/plan.out")
if [[ ${#run_it[@]} -gt 0 ]] && out=$("${run_it[@]}" --check-grid 4 2>&1) &&
    [[ " ${run_it[*]} " == *" --hidden 64 --layers 4 --image-size 8 "* &&
       " ${run_it[*]} " == *" --batch 32 "* ]]; then
  ok "the explained command runs the planned model and batch (${run_it[*]})"
else
  not_ok "the explained command" "${run_it[*]}: $out"
fi

# Every offered configuration is one its executable accepts on 4 ranks.
refused=0
while IFS= read -r flags; do
  read -r -a words <<<"$flags"
  if ! out=$(bin/"${words[0]}" "${model[@]}" "${words[@]:1}" --check-grid 4 2>&1); then
    refused=$((refused + 1))
    echo "  refused: $flags: $out"
  fi
done < <("$python" -c 'import json, sys
for r in json.load(open(sys.argv[1]))["candidates"]: print(r["label"])' "$tmp/plan.json")
((refused == 0)) && ok "every configuration passes its executable's --check-grid 4" ||
  not_ok "configurations refused by their executables" "$refused"

# A run's --config file (with options that only a run uses) plans as it is.
if bin/plan --config inputs/tutorial.json --iters 5 --world 2 --machine "$h100" --top 2 \
    >"$tmp/config.out" 2>&1 && grep -q "H 2048, L 4" "$tmp/config.out"
then ok "a run's --config plans"
else not_ok "a run's --config" "$(head -c 300 "$tmp/config.out")"; fi

# --calibrate: this machine described from a (small) bench_kernels and bench_comm, then planned on.
calibrated=$tmp/machine.json
if ! timeout 120 mpiexec -n 2 bin/bench_comm -e 64K -n 5 -w 1 --out "$tmp/comm.h5" \
      >"$tmp/comm.log" 2>&1 ||
   ! timeout 300 bin/bench_kernels --backends cpu "${model[@]}" \
      --benchmark_filter='gemm/cpu/f(32|64)/../m:(32|64|10)/|copy/cpu/f32|stream_add/cpu/f32' \
      --benchmark_min_time=0.01 --benchmark_out="$tmp/kernels.json" \
      --benchmark_out_format=json >"$tmp/kernels.log" 2>&1; then
  not_ok "benchmarks for --calibrate" \
    "$(tail -n 2 "$tmp/comm.log" "$tmp/kernels.log" | tr '\n' '|')"
elif ! bin/plan --calibrate "$calibrated" --kernels "$tmp/kernels.json" \
      --comm-bench "$tmp/comm.h5" >"$tmp/calibrate.out" 2>&1; then
  not_ok "--calibrate" "$(head -c 300 "$tmp/calibrate.out")"
elif ! bin/plan "${model[@]}" --world 2 --machine "$calibrated" --top 3 >"$tmp/local.out" 2>&1 ||
     ! grep -q "calibrated on" "$tmp/local.out"; then
  not_ok "planning on the calibrated machine" "$(head -c 300 "$tmp/local.out")"
else
  ok "--calibrate describes this machine and plans on it: $(head -n 1 "$tmp/calibrate.out")"
fi
# The inter-node link wants a bench_comm over 2 or more nodes (tests/multinode_tests.sh runs one).
if [[ -s $tmp/comm.h5 ]]; then
  if bin/plan --calibrate "$tmp/inter.json" --kernels "$tmp/kernels.json" --comm-bench \
      "$tmp/comm.h5" --inter-node-comm-bench "$tmp/comm.h5" >"$tmp/inter.out" 2>&1 ||
    [[ -e $tmp/inter.json ]] || ! grep -q "ran on one node (.*): the inter-node link wants a run over 2 or more" "$tmp/inter.out"; then
    not_ok "--inter-node-comm-bench from one node" "$(head -c 300 "$tmp/inter.out")"
  else
    ok "--inter-node-comm-bench from one node is refused, nothing written: $(head -n 1 "$tmp/inter.out")"
  fi
fi

# --comm-bench-cold: bench_comm --evict-bytes gives the links a cold fraction by size.
if ! timeout 120 mpiexec -n 2 bin/bench_comm -b 1K -e 64K -n 3 -w 1 --op allreduce \
      --evict-bytes 1M --out "$tmp/comm-cold.h5" >"$tmp/comm-cold.log" 2>&1; then
  not_ok "bench_comm --evict-bytes for --calibrate" "$(tail -n 2 "$tmp/comm-cold.log")"
elif ! bin/plan --calibrate "$tmp/cold.json" --kernels "$tmp/kernels.json" \
      --comm-bench "$tmp/comm.h5" --comm-bench-cold "$tmp/comm-cold.h5" >"$tmp/cold.out" 2>&1 ||
     [[ $(grep -c '"cold_bandwidth_bytes_fraction"' "$tmp/cold.json") != 2 ]]; then
  not_ok "--comm-bench-cold" "$(head -c 300 "$tmp/cold.out")"
else
  ok "--comm-bench-cold gives both links a cold fraction by size"
fi

# A run records its own prediction (--machine) beside its measurement: /prediction in the
# result file, agreeing with bin/plan's row for the same configuration, and a table in its
# summary; --machine none records none; a malformed description stops every rank in one line.
run_model=("${model[@]}" --iters 3 --warmup 1 --print-every 0 --eval-samples 32)
if [[ -s $calibrated ]] &&
   timeout 120 mpiexec -n 2 bin/data "${run_model[@]}" --zero 1 --machine "$calibrated" \
     --out "$tmp/predicted.h5" >"$tmp/predicted.out" 2>&1 &&
   timeout 60 bin/plan "${model[@]}" --world 2 --machine "$calibrated" --top 1000 \
     --json "$tmp/plan2.json" >/dev/null 2>&1; then
  verdict=$("$python" - "$tmp/predicted.h5" "$tmp/plan2.json" "$tmp/predicted.out" <<'PY'
import json, sys
import h5py
problems = []
with h5py.File(sys.argv[1]) as f:
    if "prediction" not in f:
        sys.exit("no /prediction in the result file")
    p = dict(f["prediction"].attrs)
rows = [r for r in json.load(open(sys.argv[2]))["candidates"]
        if r["label"] == "data --zero 1 --precision fp32"]
if len(rows) != 1:
    sys.exit(f"bin/plan has {len(rows)} rows for data --zero 1")
plan = rows[0]
for name in ("step_seconds", "exposed_comm_seconds", "optimizer_seconds"):
    if abs(p[name] - plan[name]) > 1e-9 * max(1.0, abs(plan[name])):
        problems.append(f"{name}: run {p[name]} vs plan {plan[name]}")
if int(p["oversubscribed"]) != 0:
    problems.append("2 ranks on a 2-rank description marked oversubscribed")
text = open(sys.argv[3]).read()
if "prediction: " not in text or "step ms" not in text:
    problems.append("no prediction table in the summary")
print("; ".join(problems) or f"step {p['step_seconds'] * 1e3:.3f} ms as bin/plan's row")
sys.exit(1 if problems else 0)
PY
  )
  [[ $? == 0 ]] && ok "a run records bin/plan's prediction: $verdict" ||
    not_ok "a run's prediction" "$verdict"
else
  not_ok "a run with --machine" "$(tail -n 3 "$tmp/predicted.out" | tr '\n' '|')"
fi
if timeout 60 bin/serial "${run_model[@]}" --machine none --out "$tmp/none.h5" >/dev/null 2>&1 &&
   "$python" -c 'import h5py, sys; sys.exit("prediction" in h5py.File(sys.argv[1]))' "$tmp/none.h5"
then ok "--machine none records no prediction"
else not_ok "--machine none" "a prediction was recorded (or the run failed)"; fi
# Hybrid sharding's groups ("shard" within, "data" across) are priced, not a crash.
for group in 1 2; do
  if timeout 120 mpiexec -n 4 bin/data "${run_model[@]}" --zero 3 --shard-group "$group" \
       --machine "$h100" --out "$tmp/hybrid.h5" >"$tmp/hybrid.out" 2>&1 &&
     grep -q "^prediction: " "$tmp/hybrid.out"; then
    ok "a run with --zero 3 --shard-group $group records its prediction"
  else
    not_ok "--shard-group $group with --machine" "$(tail -n 2 "$tmp/hybrid.out" | tr '\n' '|')"
  fi
done
echo '{"name": "m", "ranks_per_node": 8}' >"$tmp/partial.json"
expect_refusal "a run given a malformed machine" 2 "ranks_share_node" bin/data "${run_model[@]}" \
  --machine "$tmp/partial.json" --out "$tmp/refused.h5"

# refuse NAME PATTERN ARGS...: exit 2, one line on stderr, "plan: error: ..." naming PATTERN, no
# --json (or --calibrate) file $tmp/refused.json.
refuse() {
  local name=$1 pattern=$2 status=0
  shift 2
  rm -f "$tmp/refused.json"
  bin/plan "${model[@]}" "$@" >/dev/null 2>"$tmp/err" || status=$?
  if ((status != 2)) || [[ $(grep -c . "$tmp/err") != 1 ]] || ! grep -q -F -- "$pattern" "$tmp/err" ||
     ! grep -q '^plan: error: ' "$tmp/err"
  then not_ok "$name" "exit $status: $(head -c 300 "$tmp/err")"
  elif [[ -e $tmp/refused.json ]]; then not_ok "$name" "left a --json file"
  else ok "$name is refused in one line"; fi
}
refuse "--world 0" "--world" --world 0 --machine "$h100"
refuse "no --machine" "--machine" --world 4 --machine none
refuse "an unreadable machine" "cannot be read" --world 4 --machine "$tmp/absent.json"
refuse "a machine without its figures" "ranks_share_node" --world 4 --machine "$tmp/partial.json" \
  --json "$tmp/refused.json"
refuse "--explain past the table" "--explain 100000" --world 4 --machine "$h100" --explain 100000 \
  --json "$tmp/refused.json"
refuse "--calibrate without its inputs" "--kernels and --comm-bench" --calibrate "$tmp/c.json"
refuse "--calibrate from a file that is not bench_comm's" "not an HDF5 file" \
  --calibrate "$tmp/c.json" --kernels "$tmp/kernels.json" --comm-bench "$tmp/kernels.json"
refuse "--calibrate from a bench_comm --evict-bytes sweep" "calibrate from a sweep without it" \
  --calibrate "$tmp/c.json" --kernels "$tmp/kernels.json" --comm-bench "$tmp/comm-cold.h5"
# Kernel rates of zero give a description plans would refuse: refused before it is written.
if [[ -s $tmp/kernels.json ]]; then
  "$python" - "$tmp/kernels.json" "$tmp/zero-kernels.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for b in data["benchmarks"]:
    for key in ("TFLOP/s", "GB/s"):
        if key in b:
            b[key] = 0.0
json.dump(data, open(sys.argv[2], "w"))
PY
  refuse "--calibrate from kernel rates of zero" "must be positive" \
    --calibrate "$tmp/refused.json" --kernels "$tmp/zero-kernels.json" --comm-bench "$tmp/comm.h5"
fi
refuse "--comm-bench-cold without --evict-bytes" "not a bench_comm --evict-bytes sweep" \
  --calibrate "$tmp/c.json" --kernels "$tmp/kernels.json" --comm-bench "$tmp/comm.h5" \
  --comm-bench-cold "$tmp/comm.h5"
finish
