#!/usr/bin/env bash
# Ranks that do not agree at start-up (src/driver/startup_agreement.h): one rank refused its
# options while the others were fine, or ranks given different options, as an MPMD launch
# (`mpiexec -n 1 A : -n 1 B`) or a broken job script gives them. Every program must end within
# 10 s with one stderr line per rank (the refused rank's reason; the others naming it, or the
# differing option on every rank) and a non-zero exit, never wait in its first collective.
# Usage: bash tests/startup_agreement_tests.sh. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

tiny=(--hidden 24 --layers 2 --image-size 6 --ffn-mult 2 --batch 12 --iters 3 --warmup 1
      --print-every 0 --eval-samples 24)

# expect_mpmd NAME PATTERN -- A-ARGS... -- B-ARGS...: `mpiexec -n 1 A : -n 1 B`, at most 10 s,
# must exit non-zero with exactly 2 stderr lines, at least one matching PATTERN.
expect_mpmd() {
  local name=$1 pattern=$2
  shift 3
  local a=() b=()
  while (($#)) && [[ $1 != -- ]]; do a+=("$1"); shift; done
  shift
  b=("$@")
  local status=0
  timeout 10 mpiexec -n 1 "${a[@]}" : -n 1 "${b[@]}" >"$tmp/out" 2>"$tmp/err" || status=$?
  local lines
  lines=$(grep -c . "$tmp/err")
  if ((status == 0)); then
    not_ok "$name" "exit status 0"
  elif ((status == 124)); then
    not_ok "$name" "still running after 10 s (a rank waits for the other)"
  elif ((lines != 2)); then
    not_ok "$name" "$lines stderr lines, expected one per rank: $(head -c 400 "$tmp/err" | tr '\n' '|')"
  elif ! grep -qE -- "$pattern" "$tmp/err"; then
    not_ok "$name" "no line matches '$pattern': $(head -c 400 "$tmp/err" | tr '\n' '|')"
  else
    ok "$name ends on both ranks in one line each ($(grep -E -- "$pattern" "$tmp/err" | head -n 1 | cut -c1-110))"
  fi
}

# One rank's bad option, in every scheme executable (its own grid options where it needs them).
declare -A grid=([serial]="" [data]="" [pipeline]="--pp 2" [tensor1d]="--tp 2"
                 [tensor2d]="--tp-dims 1,1" [tensor3d]="--tp-dims 2,1,1")
for exe in serial data pipeline tensor1d tensor2d tensor3d; do
  # shellcheck disable=SC2206
  extra=(${grid[$exe]})
  expect_mpmd "$exe: rank 1 with --hidden 0" "rank 1 refused its options" -- \
    "bin/$exe" "${tiny[@]}" "${extra[@]}" -- "bin/$exe" "${tiny[@]}" "${extra[@]}" --hidden 0
done
expect_mpmd "bench_comm: rank 1 with a bad --op" "rank 1 refused its options" -- \
  bin/bench_comm -b 8 -e 64 -- bin/bench_comm -b 8 -e 64 --op scatter

# Valid options that differ between ranks: named, with both values, on every rank.
for pair in "--hidden 16" "--batch 24" "--layers 3" "--precision bf16" "--iters 4"; do
  # shellcheck disable=SC2206
  option=($pair)
  expect_mpmd "data: rank 1 with ${option[*]}" "rank 1 has ${option[0]} ${option[1]}, rank 0 has ${option[0]}" -- \
    bin/data "${tiny[@]}" -- bin/data "${tiny[@]}" "${option[@]}"
done
expect_mpmd "two different programs" "rank 1 has bin/serial, rank 0 has bin/data" -- \
  bin/data "${tiny[@]}" -- bin/serial "${tiny[@]}"

# --out may differ (only rank 0 writes): the run trains.
if timeout 60 mpiexec -n 1 bin/data "${tiny[@]}" --out "$tmp/a.h5" : -n 1 bin/data "${tiny[@]}" \
    --out "$tmp/b.h5" >"$tmp/out" 2>&1 && [[ -s $tmp/a.h5 && ! -e $tmp/b.h5 ]]; then
  ok "ranks with different --out train, rank 0 writing its own"
else
  not_ok "ranks with different --out train" "$(tail -n 2 "$tmp/out" | tr '\n' ' ')"
fi

finish
