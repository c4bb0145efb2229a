#!/usr/bin/env bash
# The pipeline schedules side by side: bin/pipeline on 4 ranks (4 stages; 8 blocks, so that the
# two-chunk schedules get one block per virtual stage) under GPipe, 1F1B, interleaved 1F1B
# (v = 2), ZB-H1 and ZB-V for M = 4, 8, 16 micro-batches (P, 2P, 4P). Prints, per M and
# schedule, the measured bubble fraction (mean over stages of bubble / (step - data), median
# over the timed iterations) beside the schedule's ideal (docs/pipeline.md: the
# zero-bubble ideals use the run's own measured F, B and W pass times), then each stage's peak
# activation memory per schedule at M = 8. Result files go to results/bench/, with a --trace
# timeline of each schedule at M = 8 (make plots draws them).
# On a machine with fewer cores than ranks the stages time-share cores (a waiting stage yields
# its core), so the measured bubble there mixes the schedule's idle time with that contention.
# Usage: bench/pipeline_bubble.sh [extra bin/pipeline options, e.g. --hidden 2048]; PIPELINE=path
# runs another build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pipeline=${PIPELINE:-bin/pipeline}
ranks=4
shape=(--hidden 1024 --layers 8 --image-size 32 --ffn-mult 4 --batch 64 --iters 12 --warmup 2
       --print-every 0 --pp "$ranks")
schedules=(gpipe 1f1b interleaved zb-h1 zb-v)
mkdir -p results/bench
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Reads bin/pipeline's report: "measured% ideal%" then each stage's peak in MiB.
summarise() {
  awk '
    function mib(value, unit) {
      return value / (unit == "B" ? 1048576 : unit == "KiB" ? 1024 : unit == "MiB" ? 1 : 1 / 1024)
    }
    /^pipeline( inference)?: / { table = 1; next }
    table && /^  [0-9]+ / { peaks = peaks sprintf("%s%.1f", peaks == "" ? "" : "/", mib($(NF - 2), $(NF - 1))) }
    /bubble fraction: measured/ {
      for (i = 1; i <= NF; ++i) if ($i == "measured") measured = $(i + 1)
      ideal = $NF
    }
    END { print measured, ideal, peaks }' "$1"
}

printf '%-4s' "M"
for schedule in "${schedules[@]}"; do printf ' %20s' "$schedule"; done
printf '\n%-4s' ""
for schedule in "${schedules[@]}"; do printf ' %20s' "measured / ideal"; done
printf '\n'
declare -A peaks=()
for m in 4 8 16; do
  printf '%-4s' "$m"
  for schedule in "${schedules[@]}"; do
    extra=()
    [[ $schedule == interleaved ]] && extra=(--virtual-stages 2)
    [[ $m == 8 ]] && extra+=(--trace "results/bench/pipeline-$schedule-m$m.trace.json")
    OPENBLAS_NUM_THREADS=1 mpiexec -n "$ranks" "$pipeline" "${shape[@]}" --micro-batches "$m" \
      --schedule "$schedule" --out "results/bench/pipeline-$schedule-m$m.h5" "${extra[@]}" "$@" \
      >"$log"
    read -r measured ideal peak < <(summarise "$log")
    printf ' %20s' "$measured / $ideal"
    [[ $m == 8 ]] && peaks[$schedule]=$peak
  done
  printf '\n'
done
echo "peak activation memory per stage at M = 8, MiB (stage 0/1/2/3):"
for schedule in "${schedules[@]}"; do printf '  %-12s %s\n' "$schedule" "${peaks[$schedule]}"; done
