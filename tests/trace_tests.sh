#!/usr/bin/env bash
# --trace: a 4-rank pipeline run's timeline must be valid trace-event JSON with a track per rank,
# forward and backward phases and sends and receives on every rank, each step overlapping on
# every rank (tests/check_trace.py); a data-parallel run's all-reduces must carry their kind,
# group and bytes; analysis/timeline_plot.py must draw the pipeline trace and make_plots.py put
# it on its page, and `make plots RESULTS=DIR` must render DIR; an unwritable
# --trace path must be refused on every rank in one line before training, and a run without
# --trace must leave no trace. Ends with "N passed, N failed".
# PIPELINE=path and DATA=path run other builds of the executables.
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

pipeline=${PIPELINE:-$repo/bin/pipeline}
data=${DATA:-$repo/bin/data}
tiny=(--hidden 12 --layers 4 --image-size 5 --ffn-mult 2 --batch 24 --iters 3 --warmup 1
      --print-every 0 --eval-samples 30)

# run_traced NAME RANKS TRACE COMMAND...: COMMAND under mpiexec with --trace TRACE must exit 0
# and say where it wrote the trace; else one "not ok - NAME" and false.
run_traced() {
  local name=$1 ranks=$2 trace=$3 status=0
  shift 3
  rm -f "$trace"
  timeout 60 mpiexec -n "$ranks" "$@" --out "$tmp/run.h5" --trace "$trace" >"$tmp/log" 2>&1 ||
    status=$?
  if ((status != 0)); then
    not_ok "$name" "exit status $status ($(tail -n 2 "$tmp/log" | tr '\n' ' '))"
    return 1
  fi
  if ! grep -qF "trace: $trace (" "$tmp/log"; then
    not_ok "$name" "no 'trace: $trace' line in the output"
    return 1
  fi
}

if run_traced "pipeline --trace" 4 "$tmp/pipeline.trace.json" "$pipeline" "${tiny[@]}"; then
  expect_output "4-rank pipeline trace" "$python" tests/check_trace.py \
    "$tmp/pipeline.trace.json" 4 --phases data,forward,backward,optimizer --comm send,recv
  if "$python" analysis/timeline_plot.py "$tmp/pipeline.trace.json" "$tmp/pipeline.png" \
      >"$tmp/plot.log" 2>&1 && [[ -s $tmp/pipeline.png ]]; then
    ok "timeline_plot.py draws the pipeline trace"
  else
    not_ok "timeline_plot.py" "$(head -c 600 "$tmp/plot.log")"
  fi
  # make_plots.py: a timeline per trace found in the folder, on the page; other JSON passed over.
  mkdir -p "$tmp/results/bench"
  cp "$tmp/pipeline.trace.json" "$tmp/results/bench/pipeline-1f1b.trace.json"
  echo '{"hidden": 8}' >"$tmp/results/config.json"
  status=0
  "$python" analysis/make_plots.py "$tmp/results" >"$tmp/plot.log" 2>&1 || status=$?
  png=$tmp/results/plots/timeline-bench-pipeline-1f1b.png
  if ((status == 0)) && [[ -s $png ]] && ! grep -q config "$tmp/plot.log" &&
      grep -qF "](timeline-bench-pipeline-1f1b.png)" "$tmp/results/plots/index.md"; then
    ok "make_plots.py renders the folder's trace as a timeline on the page"
  else
    not_ok "make_plots.py timelines" "exit status $status: $(head -c 600 "$tmp/plot.log")"
  fi
fi

plots_command=$(make -n --no-print-directory plots RESULTS="$tmp/elsewhere" 2>/dev/null | tail -n 1)
if [[ $plots_command == *"make_plots.py \"$tmp/elsewhere\""* ]]; then
  ok "make plots RESULTS=DIR renders DIR"
else
  not_ok "make plots RESULTS=DIR" "runs: $plots_command"
fi

if run_traced "data --trace" 2 "$tmp/data.trace.json" "$data" "${tiny[@]}"; then
  expect_output "2-rank data-parallel trace" "$python" tests/check_trace.py \
    "$tmp/data.trace.json" 2 --phases forward,backward,optimizer --comm allreduce
fi

mkdir -p "$tmp/out"
rm -f "$tmp/out"/*
timeout 60 mpiexec -n 2 "$data" "${tiny[@]}" --out "$tmp/out/run.h5" >"$tmp/log" 2>&1
if [[ $(ls "$tmp/out") == run.h5 ]] && ! grep -q "^trace:" "$tmp/log"; then
  ok "without --trace no trace is written"
else
  not_ok "without --trace" "files: $(ls "$tmp/out" | tr '\n' ' ')"
fi

touch "$tmp/not-a-folder"
expect_refusal "--trace under a file" 4 "--trace $tmp/not-a-folder/t.json" \
  "$pipeline" "${tiny[@]}" --out "$tmp/refused.h5" --trace "$tmp/not-a-folder/t.json"
expect_refusal "--trace naming a folder" 2 "is a directory" \
  "$data" "${tiny[@]}" --out "$tmp/refused.h5" --trace "$tmp"
expect_refusal "--trace equal to --out" 2 "is also --out" \
  "$data" "${tiny[@]}" --out "$tmp/refused.h5" --trace "$tmp/refused.h5"

finish
