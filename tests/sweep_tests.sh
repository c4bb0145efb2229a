#!/usr/bin/env bash
# Tests of the sweep driver jobs/sweep on its own (no Slurm needed): bad configs are refused
# with one line and exit status 2, --dry-run prints the sbatch lines and skips grids that do not
# fit (on the local and the template site), --launcher mpiexec runs a tiny sweep here and every
# point must leave a valid HDF5 file (tests/check_sweep_results.py). tests/slurm_tests.sh runs
# the same sweep through a real Slurm. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
source "$repo/tests/lib/sweep.sh"

# expect_config_refusal NAME PATTERN JSON [ARGS...]: the sweep must exit 2 with one stderr line
# matching PATTERN and print no command line.
expect_config_refusal() {
  local name=$1 pattern=$2 json=$3 status=0
  shift 3
  printf '%s\n' "$json" >"$tmp/bad.json"
  timeout 30 jobs/sweep "$tmp/bad.json" --dry-run "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  if ((status != 2)); then
    not_ok "$name" "exit status $status, expected 2 ($(tr '\n' '|' <"$tmp/err"))"
  elif [[ $(grep -c . "$tmp/err") -ne 1 ]] || ! grep -q -- "$pattern" "$tmp/err"; then
    not_ok "$name" "expected one line naming '$pattern', got: $(tr '\n' '|' <"$tmp/err")"
  elif grep -q -E 'sbatch|mpiexec' "$tmp/out"; then
    not_ok "$name" "printed command lines anyway"
  else
    ok "$name is refused: $(cat "$tmp/err")"
  fi
}
base='"nodes": [1], "tasks_per_node": [1], "scaling": {"strong": {"batch": 8}}'
expect_config_refusal "unknown config key" "unknown key 'bogus'" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"bogus\": 1}"
expect_config_refusal "missing schemes" "missing key 'schemes'" "{$base}"
expect_config_refusal "unknown scheme" 'unknown scheme "hybrid"' \
  "{$base, \"schemes\": [{\"executable\": \"hybrid\"}]}"
expect_config_refusal "scheme without executable" "missing key 'executable'" \
  "{$base, \"schemes\": [{\"grids\": [{}]}]}"
expect_config_refusal "grid flag of another scheme" "'pp' is not a grid flag of data" \
  "{$base, \"schemes\": [{\"executable\": \"data\", \"grids\": [{\"pp\": 2}]}]}"
expect_config_refusal "non-square tensor2d grid" "tp-dims must be square" \
  "{$base, \"schemes\": [{\"executable\": \"tensor2d\", \"grids\": [{\"tp-dims\": \"2,3\"}]}]}"
expect_config_refusal "unknown option" "unknown option 'hiden'" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"options\": {\"hiden\": 8}}"
expect_config_refusal "batch among the options" "options.batch is set by the sweep" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"options\": {\"batch\": 8}}"
expect_config_refusal "a machine description that is not there" "options.machine nosuch.json not found" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"options\": {\"machine\": \"nosuch.json\"}}"
expect_config_refusal "unknown scaling mode" "unknown scaling mode 'medium'" \
  '{"nodes": [1], "tasks_per_node": [1], "scaling": {"medium": {"batch": 8}},
    "schemes": [{"executable": "serial"}]}'
expect_config_refusal "zero node count" "nodes entry must be a positive integer" \
  '{"nodes": [0], "tasks_per_node": [1], "scaling": {"strong": {"batch": 8}},
    "schemes": [{"executable": "serial"}]}'
expect_config_refusal "invalid JSON" "not valid JSON" "{$base,"
expect_config_refusal "zero repeats" "repeat must be a positive integer" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}], \"repeat\": 0}"
# "time" and "repeat" are checked when the config is read: one line naming the key and the
# accepted form. A zero time would be no limit under Slurm and an instant timeout here; a huge
# repeat would plan that many copies of every point before the first runs.
serial="\"schemes\": [{\"executable\": \"serial\"}]"
forms="minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
for bad in '"abc"|is not a Slurm time limit' '"-5"|is not a Slurm time limit' \
           '"25:99:00"|minutes 99 must be below 60' '"1-24"|hours 24 must be below 24'; do
  value=${bad%%|*}
  expect_config_refusal "time $value" "time $value.*${bad#*|}.*($forms" \
    "{$base, $serial, \"time\": $value}"
done
expect_config_refusal "time 0, a number" "time must be a string holding a Slurm time limit ($forms" \
  "{$base, $serial, \"time\": 0}"
for value in '"0"' '"00:00:00"' '"366-00:00:00"'; do
  expect_config_refusal "time $value" "time $value must be from 1 second to 365 days" \
    "{$base, $serial, \"time\": $value}"
done
for value in -1 1.5 '"x"' true 1000000000; do
  expect_config_refusal "repeat $value" "repeat must be a positive integer up to 100, not $value" \
    "{$base, $serial, \"repeat\": $value}"
done
# JSON that Python's reader rejects past the syntax: bytes that are not UTF-8, a 5000-digit
# number (past the int() digit limit of Python 3.11 and later; a plain repeat refusal before).
expect_config_refusal "a config that is not UTF-8" "not UTF-8 text" $'{"study": "\xff"}'
expect_config_refusal "a 5000-digit repeat" 'not usable JSON (Exceeds the limit\|repeat must be' \
  "{$base, $serial, \"repeat\": $(printf '9%.0s' {1..5000})}"
# Not a dry run either: nothing runs and no results folder is made.
printf '%s\n' "{$base, $serial, \"time\": \"25:99:00\"}" >"$tmp/bad-time.json"
status=0
timeout 30 jobs/sweep "$tmp/bad-time.json" --launcher mpiexec --results "$tmp/bad-time" \
  >"$tmp/out" 2>"$tmp/err" || status=$?
if ((status == 2)) && [[ $(grep -c . "$tmp/err") -eq 1 && ! -e $tmp/bad-time ]] &&
   grep -q '^sweep: .*bad-time.json: time "25:99:00"' "$tmp/err"; then
  ok "a bad time with --launcher mpiexec runs and writes nothing"
else
  not_ok "bad time with --launcher mpiexec" "exit status $status: $(tr '\n' '|' <"$tmp/err")"
fi
# Every Slurm form is accepted, as the seconds it stands for.
if out=$(python3 -c 'import sys; sys.path.insert(0, "jobs/lib"); import sweep_config as c
print(*(c.slurm_time_seconds(t, "time") for t in sys.argv[1:]))' \
    90 90:30 25:00:00 1-2 1-2:30 1-2:30:15 365-0 2>&1) &&
   [[ $out == "5400 5430 90000 93600 95400 95415 31536000" ]]; then
  ok "time forms minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS are read as seconds"
else
  not_ok "time forms" "got: $out"
fi
expect_config_refusal "unknown site" "jobs/site/nosuch.env not found" \
  "{$base, \"schemes\": [{\"executable\": \"serial\"}]}" --site nosuch
# Grid values become file, log and job names: no path separators, no shell metacharacters.
expect_config_refusal "grid value with a path separator" "may hold only" \
  "{$base, \"schemes\": [{\"executable\": \"pipeline\", \"grids\": [{\"pp\": 1, \"schedule\": \"../x\"}]}]}"
expect_config_refusal "grid value with shell metacharacters" "may hold only" \
  "{$base, \"schemes\": [{\"executable\": \"pipeline\", \"grids\": [{\"pp\": 1, \"schedule\": \"1f1b;id\"}]}]}"
expect_config_refusal "JSON nested 100000 deep" "nested too deeply" \
  "$(python3 -c 'print("[" * 100000 + "]" * 100000)')"
# Not a dry run: the results directory is checked before anything runs.
printf '%s\n' "{$base, \"schemes\": [{\"executable\": \"serial\"}]}" >"$tmp/one.json"
status=0
timeout 30 jobs/sweep "$tmp/one.json" --launcher mpiexec --results /proc/mlpscale \
  >"$tmp/out" 2>"$tmp/err" || status=$?
if ((status == 2)) && [[ $(grep -c . "$tmp/err") -eq 1 ]] && grep -q -- "--results" "$tmp/err"; then
  ok "unusable --results is refused: $(cat "$tmp/err")"
else
  not_ok "unusable --results" "exit status $status: $(tr '\n' '|' <"$tmp/err")"
fi
# "repeat": every point once per round, the rounds one after another, labels ending -runK.
printf '%s\n' "{$base, \"schemes\": [{\"executable\": \"serial\"},
  {\"executable\": \"data\"}], \"repeat\": 2}" >"$tmp/repeat.json"
status=0
jobs/sweep "$tmp/repeat.json" --site local --dry-run >"$tmp/out" 2>&1 || status=$?
order=$(grep -o -E '(serial|data)-1x1-run[0-9]' "$tmp/out" | awk '!seen[$0]++' | tr '\n' ' ')
if ((status == 0)) && [[ $order == "serial-1x1-run1 data-1x1-run1 serial-1x1-run2 data-1x1-run2 " ]]; then
  ok "repeat 2 runs every point twice, round after round: $order"
else
  not_ok "repeat" "exit status $status, order '$order': $(tr '\n' '|' <"$tmp/out" | head -c 600)"
fi
# The local site has one node: a point on 2 nodes is skipped with the reason.
printf '%s\n' '{"nodes": [1, 2], "tasks_per_node": [1], "scaling": {"weak": {"batch_per_rank": 8}},
  "schemes": [{"executable": "data"}]}' >"$tmp/two-nodes.json"
status=0
jobs/sweep "$tmp/two-nodes.json" --site local --dry-run >"$tmp/out" 2>&1 || status=$?
if ((status == 0)) && grep -q "skip .*2 nodes exceed the site's 1" "$tmp/out" &&
   [[ $(grep -c 'sbatch ' "$tmp/out") -eq 1 ]]; then
  ok "points on more nodes than the site has are skipped"
else
  not_ok "points beyond the site's nodes" "exit status $status: $(tr '\n' '|' <"$tmp/out")"
fi

# --dry-run: one sbatch line per point that fits, a reason per point that does not, no files.
status=0
jobs/sweep "$tmp/tiny.json" --dry-run --results "$tmp/dry" >"$tmp/dry.out" 2>&1 || status=$?
lines=$(grep -c ' sbatch --parsable ' "$tmp/dry.out")
skips=$(grep -c '^# skip ' "$tmp/dry.out")
if ((status != 0 || lines != points || skips != skipped_points)); then
  not_ok "dry run" "exit status $status, $lines sbatch lines (expected $points), $skips skips" \
    "(expected $skipped_points): $(head -c 600 "$tmp/dry.out" | tr '\n' '|')"
elif [[ -e $tmp/dry ]]; then
  not_ok "dry run" "created $tmp/dry"
else
  ok "dry run prints $lines sbatch lines and $skips skipped points, creates nothing"
fi
if grep -q -F -x '# skip strong-data-dp3-1x4: --dp 3 does not match the 4 ranks (data parallelism uses all of them)' "$tmp/dry.out" &&
   grep -q -F -x '# skip weak-serial-1x2: bin/serial runs on exactly one rank, not 2 (use bin/data for several)' "$tmp/dry.out"; then
  ok "skipped points say why (--dp 3 on 4 ranks, serial on 2)"
else
  not_ok "skip reasons" "$(grep '^# skip' "$tmp/dry.out" | head -n 3 | tr '\n' '|')"
fi
# batch_of LABEL: the --batch of that point's sbatch line.
batch_of() { sed -nE "s/.*job-name=mlpscale-$1 .* --batch ([0-9]+) .*/\1/p" "$tmp/dry.out"; }
weak=$(batch_of weak-data-zero3-1x2)/$(batch_of weak-data-zero3-1x4)
strong=$(batch_of strong-data-zero3-1x2)/$(batch_of strong-data-zero3-1x4)
if [[ $weak == 4/8 && $strong == 8/8 ]]; then
  ok "weak scaling: batch 2 per rank gives 4 and 8 at 2 and 4 ranks; strong keeps 8"
else
  not_ok "batch per mode" "weak $weak (expected 4/8), strong $strong (expected 8/8)"
fi

# A GPU site: the template asks for 4 GPUs per node, so 8 tasks per node cannot fit.
sed 's/"tasks_per_node": \[1, 2, 4\]/"tasks_per_node": [4, 8]/' "$tmp/tiny.json" >"$tmp/gpu.json"
status=0
jobs/sweep "$tmp/gpu.json" --site template --dry-run >"$tmp/gpu.out" 2>&1 || status=$?
if ((status == 0)) &&
   grep -q -- '--partition=gpu .*--gpus-per-node=4 .*--exclusive' "$tmp/gpu.out" &&
   grep -q "^# skip strong-data-zero0-1x8: 8 tasks per node exceed the site's 4 GPUs per node" \
     "$tmp/gpu.out"; then
  ok "site template: partition, GPUs per node, extra flags reach sbatch; 8 tasks on 4 GPUs skipped"
else
  not_ok "site template" "exit status $status: $(head -c 600 "$tmp/gpu.out" | tr '\n' '|')"
fi

# The other schemes' grids are checked the same way (each executable's --check-grid), on the
# template site, which has as many nodes as asked for (the local one has one).
cat >"$tmp/grids.json" <<'EOF'
{"nodes": [1, 2], "tasks_per_node": [4], "scaling": {"strong": {"batch": 16}},
 "schemes": [{"executable": "pipeline", "grids": [{"pp": 3}, {"pp": 2}]},
             {"executable": "tensor1d", "grids": [{"tp": 3}]},
             {"executable": "tensor2d", "grids": [{"tp-dims": "2,2", "dp": 1}]},
             {"executable": "tensor3d", "grids": [{"tp-dims": [2, 2, 2]},
                                                  {"tp-dims": "2,2,1", "dp": 1}]}]}
EOF
status=0
jobs/sweep "$tmp/grids.json" --site template --dry-run >"$tmp/grids.out" 2>&1 || status=$?
expected_skips=(
  "strong-pipeline-pp3-1x4: --pp 3 does not divide the 4 ranks"
  "strong-tensor1d-tp3-2x4: --tp 3 does not divide the 8 ranks"
  "strong-tensor2d-tp-dims2x2-dp1-2x4: --tp-dims 2,2 --dp 1 needs 4 ranks (q·q·dp), not 8"
  "strong-tensor3d-tp-dims2x2x2-1x4: --tp-dims 2,2,2: 4 ranks are not a multiple of x·y·z = 8")
missing_skips=()
for line in "${expected_skips[@]}"; do
  grep -q -F -x "# skip $line" "$tmp/grids.out" || missing_skips+=("$line")
done
lines=$(grep -c ' sbatch --parsable ' "$tmp/grids.out")
skips=$(grep -c '^# skip ' "$tmp/grids.out")
if ((status == 0 && lines == 5 && skips == 7 && ${#missing_skips[@]} == 0)); then
  ok "pipeline and tensor grids: products checked against the ranks, 5 fit, 7 skipped"
else
  not_ok "pipeline and tensor grids" "exit status $status, $lines lines, $skips skips," \
    "missing: ${missing_skips[*]:-none}; $(head -c 600 "$tmp/grids.out" | tr '\n' '|')"
fi

# --checkpoint-activations is a grid flag of every executable: a point with it passes the flag
# and names its file after it; one without it does neither. And the sweep knows no scheme's
# flags itself: it reads each executable's --list-options, so a scheme's own flag (tensor3d's
# --prefetch-weights) is a grid flag and a shared option (--skip-memory-check) a sweep-wide one,
# with nothing in jobs/ naming them.
cat >"$tmp/flags.json" <<'EOF'
{"nodes": [1], "tasks_per_node": [2], "scaling": {"strong": {"batch": 16}},
 "options": {"skip-memory-check": true},
 "schemes": [{"executable": "serial", "tasks_per_node": [1],
              "grids": [{}, {"checkpoint-activations": true}]},
             {"executable": "data", "grids": [{"zero": 3, "checkpoint-activations": true}]},
             {"executable": "tensor3d",
              "grids": [{"tp-dims": [2, 1, 1], "prefetch-weights": true}]}]}
EOF
status=0
jobs/sweep "$tmp/flags.json" --launcher mpiexec --dry-run >"$tmp/flags.out" 2>&1 || status=$?
with=$(grep -c -- '--checkpoint-activations .*-checkpoint-activations-1x[12]\.h5' "$tmp/flags.out")
plain=$(grep -- 'serial-1x1\.h5' "$tmp/flags.out" | grep -vc -- '--checkpoint-activations')
if ((status == 0 && with == 2 && plain == 1)); then
  ok "checkpoint-activations in grids: passed on and named in the file, absent elsewhere"
else
  not_ok "checkpoint-activations in grids" "exit status $status, $with points with it," \
    "$plain plain: $(head -c 600 "$tmp/flags.out" | tr '\n' '|')"
fi
if ((status == 0)) && grep -q -- '--skip-memory-check .*--tp-dims 2,1,1 --prefetch-weights' \
    "$tmp/flags.out" && ! grep -r -q -e 'prefetch-weights' -e 'skip-memory-check' jobs/; then
  ok "grid flags and options come from the executables' --list-options"
else
  not_ok "flags from --list-options" \
    "exit status $status: $(head -c 600 "$tmp/flags.out" | tr '\n' '|')"
fi

# What the sweep asks of an executable: --list-options splits its own flags from the shared
# ones; --check-grid answers 0 (fits), 3 (does not fit these ranks) or 2 (a bad flag), one line.
listed=$(bin/data --list-options)
if python3 -c 'import json, sys; d = json.loads(sys.argv[1])
sys.exit(not ("zero" in d["scheme"] and "zero" not in d["shared"] and "hidden" in d["shared"]
              and d["program"] == "data"))' "$listed"; then
  ok "bin/data --list-options: zero its own, hidden shared"
else
  not_ok "bin/data --list-options" "$listed"
fi
# check_grid_status NAME STATUS PATTERN COMMAND...: exits STATUS with PATTERN in its output, and
# one stderr line unless it fits.
check_grid_status() {
  local name=$1 want=$2 pattern=$3 status=0
  shift 3
  "$@" >"$tmp/grid.out" 2>"$tmp/grid.err" || status=$?
  if ((status == want)) && [[ $(grep -c . "$tmp/grid.err") -eq $((want ? 1 : 0)) ]] &&
      cat "$tmp/grid.out" "$tmp/grid.err" | grep -q -F -- "$pattern"; then
    ok "$name: status $status, $(cat "$tmp/grid.out" "$tmp/grid.err")"
  else
    not_ok "$name" "status $status (expected $want):" \
      "$(cat "$tmp/grid.out" "$tmp/grid.err" | tr '\n' '|')"
  fi
}
check_grid_status "--check-grid on a grid that fits" 0 "fits 4 ranks: tp-dims=2,2,dp=1" \
  bin/tensor2d --tp-dims 2,2 --check-grid 4
check_grid_status "--check-grid on too many ranks" 3 "does not fit 6 ranks: --tp-dims 2,2" \
  bin/tensor2d --tp-dims 2,2 --check-grid 6
check_grid_status "--check-grid on a non-square grid" 2 "error: --tp-dims 2,3" \
  bin/tensor2d --tp-dims 2,3 --check-grid 4
check_grid_status "--check-grid on --shard-group without ZeRO-3" 2 "needs --zero 3" \
  bin/data --shard-group 2 --check-grid 4
check_grid_status "--check-grid on a malformed --partition" 2 "'x' is not a positive number" \
  bin/pipeline --partition 1,x --check-grid 2
check_grid_status "--check-grid on --pp beyond the ranks" 3 "does not fit 2 ranks: --pp 3" \
  bin/pipeline --pp 3 --check-grid 2

# --launcher mpiexec: the same points here, one after another.
status=0
timeout 300 jobs/sweep "$tmp/tiny.json" --launcher mpiexec --results "$tmp/mpiexec" \
  >"$tmp/mpiexec.out" 2>&1 || status=$?
if ((status == 0)) && grep -q "^$points ran, $skipped_points skipped, 0 failed" "$tmp/mpiexec.out"; then
  ok "--launcher mpiexec ran $points points"
  check_results "$tmp/mpiexec/tiny" "mpiexec"
else
  not_ok "--launcher mpiexec" "exit status $status: $(tail -n 4 "$tmp/mpiexec.out" | tr '\n' '|')"
fi

finish
