#!/usr/bin/env bash
# Tests of the plotting scripts (analysis/) on result files the suite itself writes: tiny runs of
# bin/serial, bin/data (1, 2, 4 ranks at a fixed global batch; 2 ranks at a fixed per-rank batch;
# ZeRO-3) and bin/bench_comm, plus one file edited into what later schemes write (a collective on a
# sub-communicator, "allreduce:inner", and a /timing/bubble table). analysis/make_plots.py must
# write every expected figure as a real, non-empty PNG and a summary page listing every run; a
# file with a field removed must give one line naming the file and the field, never a traceback.
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
      --eval-samples 16)
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

# Values no run can have: a global batch of 0 and a NaN step time, each one line naming file
# and field.
"$python" - "$results/strong/data-2.h5" "$broken" <<'EOF'
import math, shutil, sys
import h5py
good, out = sys.argv[1], sys.argv[2]
shutil.copy(good, out + "/zero-batch.h5")
with h5py.File(out + "/zero-batch.h5", "a") as f:
    f.attrs["global_batch"] = 0
shutil.copy(good, out + "/nan-step.h5")
with h5py.File(out + "/nan-step.h5", "a") as f:
    f["timing/step"][0, 0] = math.nan
EOF
for bad in "zero-batch.h5:global_batch 0 is not positive" \
           "nan-step.h5:/timing/step holds a NaN, infinite or negative time"; do
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

finish
