#!/usr/bin/env bash
# The pipeline bubble against micro-batching: bin/pipeline on 4 ranks (4 stages, one block each)
# for M = 1, 2, 4, 8 micro-batches under GPipe and 1F1B. Prints, per M, the measured bubble
# fraction of each schedule (mean over stages of bubble / (step - data), median over the timed
# iterations) beside the ideal (P-1)/(M+P-1), and the peak activation memory of each stage under
# GPipe (M micro-batches held) and 1F1B (min(P-s, M)). Result files go to results/bench/, with a
# --trace timeline of each schedule at M = 8.
# On a machine with fewer cores than ranks the stages time-share cores and MPI's waits spin, so
# the measured bubble there mixes the schedule's idle time with that contention.
# Usage: bench/pipeline_bubble.sh [extra bin/pipeline options, e.g. --hidden 2048]; PIPELINE=path
# runs another build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pipeline=${PIPELINE:-bin/pipeline}
ranks=4
shape=(--hidden 1024 --layers 4 --image-size 32 --ffn-mult 4 --batch 64 --iters 10 --warmup 2
       --print-every 0 --pp "$ranks")
mkdir -p results/bench
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Reads bin/pipeline's report: "measured bubble%" then each stage's peak in MiB.
summarise() {
  awk '
    function mib(value, unit) {
      return value / (unit == "B" ? 1048576 : unit == "KiB" ? 1024 : unit == "MiB" ? 1 : 1 / 1024)
    }
    /^pipeline( inference)?: / { table = 1; next }
    table && /^  [0-9]+ / { peaks = peaks sprintf("%s%.1f", peaks == "" ? "" : "/", mib($(NF - 2), $(NF - 1))) }
    /bubble fraction: measured/ { for (i = 1; i <= NF; ++i) if ($i == "measured") measured = $(i + 1) }
    END { print measured, peaks }' "$1"
}

printf '%-4s %10s %10s %10s   %-30s %-30s\n' "M" "GPipe" "1F1B" "ideal" \
  "GPipe activations MiB/stage" "1F1B activations MiB/stage"
for m in 1 2 4 8; do
  declare -A bubble=() peaks=()
  for schedule in gpipe 1f1b; do
    # A timeline per schedule at M = 8 (make plots draws it).
    trace=()
    [[ $m == 8 ]] && trace=(--trace "results/bench/pipeline-$schedule-m$m.trace.json")
    OPENBLAS_NUM_THREADS=1 mpiexec -n "$ranks" "$pipeline" "${shape[@]}" --micro-batches "$m" \
      --schedule "$schedule" --out "results/bench/pipeline-$schedule-m$m.h5" "${trace[@]}" "$@" \
      >"$log"
    read -r bubble[$schedule] peaks[$schedule] < <(summarise "$log")
  done
  ideal=$(awk -v p="$ranks" -v m="$m" 'BEGIN { printf "%.1f%%", 100 * (p - 1) / (m + p - 1) }')
  printf '%-4s %10s %10s %10s   %-30s %-30s\n' "$m" "${bubble[gpipe]}" "${bubble[1f1b]}" "$ideal" \
    "${peaks[gpipe]}" "${peaks[1f1b]}"
done
