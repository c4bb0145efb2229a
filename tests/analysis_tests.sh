#!/usr/bin/env bash
# Tests of the plotting scripts (analysis/) on result files the suite itself writes: tiny runs of
# bin/serial, bin/data (1, 2, 4 ranks at a fixed global batch; 2 ranks at a fixed per-rank batch;
# ZeRO-3) and bin/bench_comm, plus one file edited into what later schemes write (a collective on a
# sub-communicator, "allreduce:inner", and a /timing/bubble table). analysis/make_plots.py must
# write every expected figure as a real, non-empty PNG and a summary page listing every run; a
# file with a field removed must give one line naming the file and the field, never a traceback.
# Copies given a synthetic /prediction (the planner's, as runs with --machine record it) check
# analysis/plan_accuracy.py's table, closing lines (figures recomputed here), skipped files,
# --json and figures, a /prediction lacking a field, and its Kendall tau on hand-made orderings.
# Builds nothing: expects bin/serial, bin/data and bin/bench_comm. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

for tool in bin/serial bin/data bin/bench_comm; do
  [[ -x $tool ]] || not_ok "$tool" "not built (run make first)"
done
if ! "$python" -c 'import h5py, numpy, matplotlib' 2>/dev/null; then
  not_ok "python packages" "$python cannot import h5py, numpy and matplotlib (run make deps)"
fi
((failed == 0)) || finish

# --- Result files of every kind -------------------------------------------------------------
results=$tmp/results
tiny=(--hidden 16 --layers 1 --image-size 8 --ffn-mult 2 --iters 6 --warmup 1 --print-every 0
      --eval-samples 16 --machine none)  # predictions are added below, by hand
run() {  # run NAME COMMAND...: runs a tool, one "not ok" line if it fails
  local name=$1
  shift
  if timeout 60 "$@" >"$tmp/log" 2>&1; then
    return 0
  fi
  not_ok "$name" "exit status $? ($(tail -n 2 "$tmp/log" | tr '\n' ' '))"
  return 1
}
run "serial run" bin/serial "${tiny[@]}" --batch 8 --out "$results/serial.h5"
for ranks in 1 2 4; do
  run "data on $ranks ranks" mpiexec -n "$ranks" bin/data "${tiny[@]}" --batch 8 \
    --out "$results/strong/data-$ranks.h5"
done
run "data weak 2 ranks" mpiexec -n 2 bin/data "${tiny[@]}" --batch 16 --out "$results/weak/data-2.h5"
run "data zero 3" mpiexec -n 2 bin/data "${tiny[@]}" --batch 8 --zero 3 --out "$results/zero3-2.h5"
run "bench_comm" mpiexec -n 2 bin/bench_comm -e 4K -n 2 -w 1 --out "$results/comm-2.h5"
# What hybrid schemes write: a collective on a sub-communicator and a pipeline bubble.
if ! "$python" - "$results/strong/data-2.h5" "$results/future-2.h5" <<'EOF' 2>"$tmp/log"; then
import shutil, sys
import h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    f.move("comm/allreduce", "comm/allreduce:inner")
    f["comm/allreduce:inner"].attrs["kind"] = "allreduce"
    f["comm/allreduce:inner"].attrs["group_size"] = 2
    f["timing/bubble"] = f["timing/step"][()] * 0.1
    f["timing/bubble"].attrs["units"] = "seconds"
    f.attrs["hosts"] = "node-a,node-b"
EOF
  not_ok "edited result file" "$(tail -n 1 "$tmp/log")"
fi
((failed == 0)) || finish
ok "tiny runs wrote $(find "$results" -name '*.h5' | wc -l) result files"

# --- make_plots on the whole folder --------------------------------------------------------
plots=$tmp/plots
status=0
timeout 120 "$python" analysis/make_plots.py "$results" --out "$plots" >"$tmp/out" 2>"$tmp/err" || status=$?
if ((status != 0)) || [[ -s $tmp/err ]]; then
  not_ok "make_plots on good files" "exit status $status, stderr: $(head -c 600 "$tmp/err")"
  finish
fi
ok "make_plots on good files exits 0 with nothing on stderr"

is_png() { [[ -s $1 && $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; }
for prefix in scaling-strong scaling-weak breakdown loss busbw; do
  found=("$plots/$prefix"-*.png)
  if [[ ! -e ${found[0]} ]]; then
    not_ok "$prefix figure" "no $prefix-*.png in $(ls "$plots" | tr '\n' ' ')"
  fi
done
bad=""
count=0
for png in "$plots"/*.png; do
  count=$((count + 1))
  is_png "$png" || bad+=" $(basename "$png")"
  grep -qF "]($(basename "$png"))" "$plots/index.md" || bad+=" $(basename "$png")(not on the page)"
done
if [[ -z $bad && $count -ge 5 ]]; then
  ok "$count figures are non-empty PNG files shown on the page"
else
  not_ok "figures" "bad or missing:$bad (count $count)"
fi
for image in $(grep -o '](\([^)]*\.png\))' "$plots/index.md" | sed 's/^](//; s/)$//'); do
  [[ -f $plots/$image ]] || not_ok "page image $image" "missing"
done

missing=""
while IFS= read -r file; do
  name=${file#"$results"/}
  grep -qF "[$name](" "$plots/index.md" || missing+=" $name"
done < <(find "$results" -name '*.h5')
if [[ -z $missing ]]; then
  ok "index.md lists every run and benchmark"
else
  not_ok "index.md" "does not list:$missing"
fi
if grep -q "Strong scaling, global batch 8" "$plots/index.md" &&
   grep -q "Weak scaling, per-rank batch 8" "$plots/index.md"; then
  ok "strong (fixed global batch) and weak (fixed per-rank batch) series recognised"
else
  not_ok "scaling series" "$(grep '^### .*scaling' "$plots/index.md" | tr '\n' ' ')"
fi
row=$(grep -F "[strong/data-2.h5](" "$plots/index.md")
if [[ $(awk -F'|' '{print $10}' <<<"$row") =~ [0-9] && $(awk -F'|' '{print $11}' <<<"$row") =~ [0-9] ]]; then
  ok "run table has step time and samples/s"
else
  not_ok "run table" "row: $row"
fi

# --- A file with a required field removed --------------------------------------------------
broken=$tmp/broken
mkdir -p "$broken"
"$python" - "$results/strong/data-2.h5" "$broken/no-step.h5" <<'EOF'
import shutil, sys
import h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    del f["timing/step"]
EOF
expect_one_line() {  # NAME STDERR_FILE: exactly one line "FILE: missing /timing/step", no traceback
  local lines
  lines=$(grep -c . "$2")
  if [[ $lines -eq 1 ]] && grep -qx "$broken/no-step.h5: missing /timing/step" "$2" &&
     ! grep -q Traceback "$2"; then
    ok "$1"
  else
    not_ok "$1" "stderr: $(head -c 600 "$2")"
  fi
}
status=0
"$python" analysis/make_plots.py "$broken/no-step.h5" --out "$tmp/plots-broken" \
  >/dev/null 2>"$tmp/err" || status=$?
if ((status == 1)); then
  expect_one_line "make_plots on only the broken file: exit 1 and one line naming file and field" "$tmp/err"
else
  not_ok "make_plots on only the broken file" "exit status $status, expected 1"
fi
status=0
"$python" analysis/make_plots.py "$broken/no-step.h5" "$results/serial.h5" --out "$tmp/plots-mixed" \
  >/dev/null 2>"$tmp/err" || status=$?
if ((status == 0)) && grep -q "skipped .*no-step.h5.*missing /timing/step" "$tmp/plots-mixed/index.md"; then
  expect_one_line "broken file among good ones: skipped on the page, one line on stderr" "$tmp/err"
else
  not_ok "broken file among good ones" \
    "exit status $status; page: $(grep -i skipped "$tmp/plots-mixed/index.md")"
fi
status=0
"$python" analysis/run_table.py "$broken/no-step.h5" >/dev/null 2>"$tmp/err" || status=$?
if ((status == 1)); then
  expect_one_line "run_table.py on the broken file: exit 1 and one line" "$tmp/err"
else
  not_ok "run_table.py on the broken file" "exit status $status, expected 1"
fi

# Values no run can have: a global batch of 0, a NaN step time, a config_json that is no object
# of options, each one line naming file and field.
"$python" - "$results/strong/data-2.h5" "$broken" <<'EOF'
import json, math, shutil, sys
import h5py
good, out = sys.argv[1], sys.argv[2]
shutil.copy(good, out + "/zero-batch.h5")
with h5py.File(out + "/zero-batch.h5", "a") as f:
    f.attrs["global_batch"] = 0
shutil.copy(good, out + "/nan-step.h5")
with h5py.File(out + "/nan-step.h5", "a") as f:
    f["timing/step"][0, 0] = math.nan
# config_json valid JSON but no object of options (every reader looks options up by name), or
# an option holding an object (runs are grouped by their options, which must be hashable)
shutil.copy(good, out + "/config-list.h5")
with h5py.File(out + "/config-list.h5", "a") as f:
    f.attrs["config_json"] = "[1, 2]"
shutil.copy(good, out + "/config-nested.h5")
with h5py.File(out + "/config-nested.h5", "a") as f:
    f.attrs["config_json"] = json.dumps(dict(json.loads(f.attrs["config_json"]), comm={"a": 1}))
EOF
for bad in "zero-batch.h5:global_batch 0 is not positive" \
           "nan-step.h5:/timing/step holds a NaN, infinite or negative time" \
           "config-list.h5:attribute config_json is a JSON array, expected an object of option names and values" \
           "config-nested.h5:attribute config_json option 'comm' holds an object, expected a number, string, boolean, null or an array of those"; do
  file=${bad%%:*}
  why=${bad#*:}
  status=0
  "$python" analysis/run_table.py "$broken/$file" >/dev/null 2>"$tmp/err" || status=$?
  if ((status == 1)) && [[ $(grep -c . "$tmp/err") -eq 1 ]] &&
     grep -qxF "$broken/$file: $why" "$tmp/err"; then
    ok "run_table.py refuses $file in one line naming the field"
  else
    not_ok "run_table.py on $file" "exit status $status, stderr: $(head -c 600 "$tmp/err")"
  fi
done
# One such file among good ones is skipped; the others are still plotted.
mkdir -p "$tmp/config-mixed"
cp "$results/strong/data-1.h5" "$results/strong/data-2.h5" "$broken/config-list.h5" "$tmp/config-mixed/"
status=0
"$python" analysis/make_plots.py "$tmp/config-mixed" --out "$tmp/plots-config" >/dev/null \
  2>"$tmp/err" || status=$?
if ((status == 0)) && [[ $(grep -c . "$tmp/err") -eq 1 ]] &&
   grep -qxF "$tmp/config-mixed/config-list.h5: attribute config_json is a JSON array, expected an object of option names and values" "$tmp/err" &&
   compgen -G "$tmp/plots-config/scaling-strong-*.png" >/dev/null &&
   grep -q "skipped .*config-list.h5.*config_json" "$tmp/plots-config/index.md"; then
  ok "a config_json array among good files: one line, skipped on the page, the others plotted"
else
  not_ok "config_json array among good files" "exit status $status, stderr: $(head -c 600 "$tmp/err")"
fi

# --- --trace files: a bad event skips that trace in one line, never a traceback --------------
traces=$tmp/traces
mkdir -p "$traces"
run "data with --trace" mpiexec -n 2 bin/data "${tiny[@]}" --batch 8 --out "$tmp/traced.h5" \
  --trace "$traces/good.trace.json"
# file: (what is done to the events, the reason make_plots and timeline_plot.py must give); a
# file not named *.trace.json is a trace too when it has a traceEvents list
if ! "$python" - "$traces" <<'EOF' >"$tmp/trace-expected" 2>"$tmp/log"; then
import json, sys
folder = sys.argv[1]
with open(f"{folder}/good.trace.json") as f:
    good = json.load(f)
cases = {
    "no-pid.trace.json": (lambda e, i: e.pop("pid"), "has no pid"),
    "nan-dur.trace.json": (lambda e, i: e.update(dur=float("nan")) if i == 3 else None,
                           "dur NaN is not a finite number of µs >= 0"),
    "negative-dur.trace.json": (lambda e, i: e.update(dur=-5) if i == 3 else None,
                                "dur -5 is not a finite number of µs >= 0"),
    "text-dur.json": (lambda e, i: e.update(dur="abc") if i == 3 else None,
                      'dur "abc" is not a finite number of µs >= 0'),
}
for name, (change, why) in cases.items():
    doc = json.loads(json.dumps(good))
    first, i = None, 0  # first: the index of the first event changed, which the line names
    for n, e in enumerate(doc["traceEvents"]):
        if e.get("ph") != "X":
            continue
        before = dict(e)
        change(e, i)
        i += 1
        first = n if first is None and e != before else first
    with open(f"{folder}/{name}", "w") as f:
        json.dump(doc, f)
    print(f"{folder}/{name}: traceEvents[{first}] (ph X): {why}")
EOF
  not_ok "bad trace files" "$(tail -n 1 "$tmp/log")"
fi
status=0
"$python" analysis/make_plots.py "$traces" --out "$tmp/plots-traces" >/dev/null 2>"$tmp/err" ||
  status=$?
if ((status == 0)) && ! grep -q Traceback "$tmp/err" &&
   diff <(sort "$tmp/trace-expected") <(sort "$tmp/err") >/dev/null &&
   is_png "$tmp/plots-traces/timeline-good.png" &&
   [[ $(grep -c "^- skipped .*json" "$tmp/plots-traces/index.md") -eq 4 ]]; then
  ok "make_plots skips 4 bad traces (no pid; NaN, negative, text dur) in one line each, draws the good one"
else
  not_ok "make_plots on bad traces" "exit status $status, stderr: $(head -c 800 "$tmp/err")"
fi
status=0
"$python" analysis/timeline_plot.py "$traces/nan-dur.trace.json" "$tmp/nan.png" >/dev/null \
  2>"$tmp/err" || status=$?
if ((status == 1)) && [[ $(grep -c . "$tmp/err") -eq 1 && ! -e $tmp/nan.png ]] &&
   grep -qxF "$(grep nan-dur "$tmp/trace-expected")" "$tmp/err"; then
  ok "timeline_plot.py on a NaN dur: exit 1, one line naming the file and the event"
else
  not_ok "timeline_plot.py on a NaN dur" "exit status $status, stderr: $(head -c 600 "$tmp/err")"
fi
status=0
"$python" analysis/make_plots.py "$traces/no-pid.trace.json" --out "$tmp/plots-no-pid" >/dev/null \
  2>"$tmp/err" || status=$?
if ((status == 1)) && [[ $(grep -c . "$tmp/err") -eq 1 ]] &&
   grep -qxF "$(grep no-pid "$tmp/trace-expected")" "$tmp/err"; then
  ok "make_plots on only a trace without pid: exit 1 and one line"
else
  not_ok "make_plots on only a trace without pid" "exit status $status, stderr: $(head -c 600 "$tmp/err")"
fi

# --- The planner's predictions: analysis/plan_accuracy.py and its figures ------------------
# Copies of the runs above, each given a synthetic /prediction (the step a known factor of the
# measured one, one run oversubscribed, one with a pipeline bubble), and two files without one.
# The expected closing lines are computed here from the files, independently of the script.
planned=$tmp/planned
mkdir -p "$planned"
cp "$results/serial.h5" "$results/zero3-2.h5" "$results/future-2.h5" "$planned/"
cp "$results/strong/data-1.h5" "$results/strong/data-2.h5" "$results/strong/data-4.h5" "$planned/"
cp "$results/weak/data-2.h5" "$planned/weak-data-2.h5"
cp "$results/comm-2.h5" "$planned/comm-2.h5"
if ! "$python" - "$planned" "$tmp/plan-expected" <<'EOF' 2>"$tmp/log"; then
import json, sys
import h5py
import numpy as np
folder, expected = sys.argv[1], sys.argv[2]
# file: (step factor, peak memory factor, oversubscribed); data-4.h5 and comm-2.h5 get none
plan = {"serial.h5": (1.1, 1.25, 0), "data-1.h5": (0.8, 0.9, 0), "data-2.h5": (1.2, 1.0, 0),
        "zero3-2.h5": (0.9, 1.1, 0), "future-2.h5": (1.05, 0.95, 0),
        "weak-data-2.h5": (1.5, 1.3, 1)}
runs = []
for name, (step_factor, memory_factor, oversubscribed) in plan.items():
    with h5py.File(f"{folder}/{name}", "a") as f:
        warmup = int(f.attrs["warmup_iterations"])
        step_table = f["timing/step"][()]
        step = float(np.median(step_table[warmup:].max(axis=1)))
        peak = float(np.max(f["memory/peak_bytes"][()]))
        config = json.loads(f.attrs["config_json"])
        # runs of one problem: world size, global batch, device, mode and model shape
        key = (int(f.attrs["world_size"]), int(f.attrs["global_batch"]), f.attrs["device"],
               f.attrs.get("mode", "train"),
               tuple(config[k] for k in ("hidden", "layers", "ffn-mult", "image-size", "block")))
        bubble = None
        if "bubble" in f["timing"]:
            busy = step_table[warmup:] - f["timing/data"][()][warmup:]
            bubble = float(np.mean(np.median(f["timing/bubble"][()][warmup:] / busy, axis=0)))
        g = f.create_group("prediction")
        g.attrs["machine"] = "test-machine"
        g.attrs["machine_file"] = "inputs/machines/test-machine.json"
        for part in ("compute_seconds", "optimizer_seconds", "comm_seconds", "exposed_comm_seconds"):
            g.attrs[part] = 0.25 * step
        g.attrs["step_seconds"] = step_factor * step
        g.attrs["peak_bytes"] = memory_factor * peak
        g.attrs["bubble_fraction"] = 0.2
        g.attrs["samples_per_second"] = int(f.attrs["global_batch"]) / (step_factor * step)
        g.attrs["oversubscribed"] = np.int64(oversubscribed)
        predicted, predicted_peak = float(g.attrs["step_seconds"]), float(g.attrs["peak_bytes"])
    runs.append(dict(over=oversubscribed, key=key, predicted=predicted, step=step,
                     error=abs((predicted - step) / step), memory=abs(predicted_peak - peak) / peak,
                     bubble=bubble))


def line(members, prefix):
    concordant = discordant = 0
    slowdowns = []
    for key in {r["key"] for r in members}:
        group = [r for r in members if r["key"] == key]
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a = (group[i]["predicted"] - group[j]["predicted"]) * (group[i]["step"] - group[j]["step"])
                concordant, discordant = concordant + (a > 0), discordant + (a < 0)
        if len(group) >= 2:
            chosen = min(group, key=lambda r: r["predicted"])
            slowdowns.append(chosen["step"] / min(r["step"] for r in group) - 1)
    pairs = concordant + discordant
    tau = f"{(concordant - discordant) / pairs:.2f}" if pairs else "n/a"
    slowdown = f"{max(slowdowns) * 100:.1f}%" if slowdowns else "n/a"
    errors = [r["error"] for r in members]
    return (f"{prefix}runs {len(members)}, median error {np.median(errors) * 100:.1f}%, max error "
            f"{max(errors) * 100:.1f}%, kendall tau {tau}, best slowdown {slowdown}, memory max "
            f"error {max(r['memory'] for r in members) * 100:.1f}%")


with open(expected, "w") as out:
    print(line([r for r in runs if r["over"]], "oversubscribed: "), file=out)
    print(line([r for r in runs if not r["over"]], ""), file=out)
    print(next(r["bubble"] for r in runs if r["bubble"] is not None), file=out)
EOF
  not_ok "result files with a /prediction" "$(tail -n 1 "$tmp/log")"
  finish
fi
status=0
timeout 120 "$python" analysis/plan_accuracy.py "$planned" --out "$tmp/plan-plots" \
  --json "$tmp/plan.json" >"$tmp/out" 2>"$tmp/err" || status=$?
if ((status == 0)) && [[ ! -s $tmp/err ]]; then
  ok "plan_accuracy.py on files with a prediction exits 0 with nothing on stderr"
else
  not_ok "plan_accuracy.py" "exit status $status, stderr: $(head -c 600 "$tmp/err")"
fi
closing='^runs [0-9]+, median error [0-9]+\.[0-9]%, max error [0-9]+\.[0-9]%, kendall tau (-?[0-9]\.[0-9]{2}|n/a), best slowdown ([0-9]+\.[0-9]%|n/a), memory max error ([0-9]+\.[0-9]%|n/a)$'
last=$(tail -n 1 "$tmp/out")
if [[ $last =~ $closing ]]; then
  ok "the last line is the closing line: $last"
else
  not_ok "plan_accuracy.py closing line" "last line: $last"
fi
expected=$(sed -n 2p "$tmp/plan-expected")
if [[ $last == "$expected" ]]; then
  ok "median and max error, kendall tau, best slowdown and memory error are the constructed ones"
else
  not_ok "plan_accuracy.py figures" "got '$last', expected '$expected'"
fi
expected=$(sed -n 1p "$tmp/plan-expected")
got=$(tail -n 2 "$tmp/out" | head -n 1)
if [[ $got == "$expected" ]]; then
  ok "the oversubscribed run is summarised apart, before the dedicated line"
else
  not_ok "oversubscribed line" "got '$got', expected '$expected'"
fi
if grep -qx "skipped 2 files without a prediction: comm-2.h5, data-4.h5" "$tmp/out"; then
  ok "files without /prediction are skipped in one line naming them"
else
  not_ok "files without /prediction" "$(grep skipped "$tmp/out")"
fi
rows=$(grep -cE '^(serial|data-1|data-2|zero3-2|future-2|weak-data-2)\.h5 ' "$tmp/out")
if ((rows == 6)) && grep -E '^future-2\.h5 ' "$tmp/out" | grep -q ' 0\.200/'; then
  ok "one table row per predicted run, the bubble shown for the run with /timing/bubble"
else
  not_ok "plan_accuracy.py table" "$rows rows: $(head -c 600 "$tmp/out")"
fi
if "$python" - "$tmp/plan.json" "$(sed -n 3p "$tmp/plan-expected")" <<'EOF' 2>"$tmp/log"; then
import json, math, sys
doc = json.load(open(sys.argv[1]))
assert doc["sets"]["dedicated"]["runs"] == 5 and doc["sets"]["oversubscribed"]["runs"] == 1, doc["sets"]
assert len(doc["runs"]) == 6, len(doc["runs"])
assert doc["skipped_without_prediction"] == ["comm-2.h5", "data-4.h5"], doc["skipped_without_prediction"]
pipeline = next(r for r in doc["runs"] if r["file"] == "future-2.h5")
assert math.isclose(pipeline["measured_bubble_fraction"], float(sys.argv[2]), rel_tol=1e-12), pipeline
EOF
  ok "--json holds both sets, every row and the measured bubble fraction"
else
  not_ok "plan_accuracy.py --json" "$(tail -n 1 "$tmp/log")"
fi
for png in plan-step-scatter plan-error-by-scheme; do
  if is_png "$tmp/plan-plots/$png.png"; then
    ok "plan_accuracy.py --out wrote $png.png"
  else
    not_ok "$png figure" "missing or not a PNG: $(ls "$tmp/plan-plots" 2>&1 | tr '\n' ' ')"
  fi
done
status=0
timeout 120 "$python" analysis/make_plots.py "$planned" --out "$tmp/plan-page" >/dev/null \
  2>"$tmp/err" || status=$?
if ((status == 0)) && [[ ! -s $tmp/err ]] && is_png "$tmp/plan-page/plan-step-scatter.png" &&
   is_png "$tmp/plan-page/plan-error-by-scheme.png" &&
   grep -qF "](plan-step-scatter.png)" "$tmp/plan-page/index.md" &&
   grep -qF "](plan-error-by-scheme.png)" "$tmp/plan-page/index.md" &&
   ! compgen -G "$plots/plan-*.png" >/dev/null; then
  ok "make_plots draws the planner figures when a file has /prediction, and only then"
else
  not_ok "make_plots planner figures" "exit status $status, stderr: $(head -c 300 "$tmp/err");\
 on the page: $(grep -c 'plan-' "$tmp/plan-page/index.md"); without predictions:\
 $(ls "$plots" | grep plan- | tr '\n' ' ')"
fi

# A /prediction without step_seconds, among good files: one line naming the file and the
# attribute, exit status 1.
mkdir -p "$tmp/planned-bad"
cp "$planned/serial.h5" "$planned/data-1.h5" "$tmp/planned-bad/"
"$python" -c 'import sys, h5py; h5py.File(sys.argv[1], "a")["prediction"].attrs.__delitem__("step_seconds")' \
  "$tmp/planned-bad/serial.h5"
status=0
"$python" analysis/plan_accuracy.py "$tmp/planned-bad" >/dev/null 2>"$tmp/err" || status=$?
if ((status == 1)) && [[ $(grep -c . "$tmp/err") -eq 1 ]] && ! grep -q Traceback "$tmp/err" &&
   grep -qxF "$tmp/planned-bad/serial.h5: missing attribute /prediction step_seconds" "$tmp/err"; then
  ok "a /prediction without step_seconds: exit 1 and one line naming the file and the field"
else
  not_ok "plan_accuracy.py on a /prediction without step_seconds" \
    "exit status $status, stderr: $(head -c 600 "$tmp/err")"
fi

# Three runs of one configuration (a sweep's "repeat"), steps 1, 2 and 6 times serial.h5's: one
# row at their median (not their mean), 2 times, against the prediction of 1.1 times: -45.0%.
mkdir -p "$tmp/repeats"
for k in 1 2 6; do
  cp "$planned/serial.h5" "$tmp/repeats/serial-run$k.h5"
  "$python" -c 'import sys, h5py; f = h5py.File(sys.argv[1], "a"); f["timing/step"][...] *= int(sys.argv[2])' \
    "$tmp/repeats/serial-run$k.h5" "$k"
done
out=$("$python" analysis/plan_accuracy.py "$tmp/repeats" 2>&1)
if grep -qx "3 files of 1 configurations: .*" <<<"$out" && grep -q "^runs 1, median error 45.0%" <<<"$out" &&
   grep -qF "serial-run1.h5 (median of 3)" <<<"$out"; then
  ok "repeated runs of one configuration are one row at their median step"
else
  not_ok "plan_accuracy.py over repeats" "$(tr '\n' '|' <<<"$out" | head -c 600)"
fi

# Kendall tau on hand-computed orderings: in order 1, reversed -1, one swap of four (5 - 1) / 6.
if out=$("$python" -c '
import sys
sys.path.insert(0, "analysis")
from plan_accuracy import kendall_tau
print(f"{kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]):.2f}", f"{kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]):.2f}",
      f"{kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]):.2f}", kendall_tau([1], [1]))' 2>&1) &&
   [[ $out == "1.00 -1.00 0.67 nan" ]]; then
  ok "kendall_tau: ordered 1.00, reversed -1.00, one swap of four 0.67, no pair nan"
else
  not_ok "kendall_tau" "got: $out"
fi

finish
