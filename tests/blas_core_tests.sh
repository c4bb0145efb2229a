#!/usr/bin/env bash
# Which BLAS kernels the executables run (kernels/cpu/blas_core.h, docs/cpu-blas.md): named in
# the settings header and every result file; the processor's own when OPENBLAS_CORETYPE is
# unset, also after the library's fallback (MLPSCALE_ASSUME_BLAS_CORE=Prescott stands in for
# it: the run executes again with the processor's core, on 1 and on 2 ranks); a user's setting
# kept and explained; kernels the processor cannot run refused in one line; bench_kernels'
# GEMMs against the FMA peak. Ends with "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

serial=$repo/bin/serial
tiny=(--hidden 16 --layers 1 --image-size 8 --batch 8 --iters 2 --warmup 1 --print-every 0
      --eval-samples 16)
# The correction's marker must not leak in from the caller's environment.
clean=(env -u OPENBLAS_CORETYPE -u MLPSCALE_BLAS_CORE_CORRECTED_FROM -u MLPSCALE_ASSUME_BLAS_CORE)

if [[ ! -x $serial || ! -x $repo/bin/data || ! -x $repo/bin/bench_kernels ]]; then
  problem "bin/serial, bin/data or bin/bench_kernels not built (run 'make' first)"
  report "executables exist"
  finish
fi

# attr FILE NAME: a root attribute of a result file ("" when absent).
attr() {
  "$python" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    v = f.attrs.get(sys.argv[2], "")
    print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}
# header_core LOG: the core named on the header's blas line.
header_core() { sed -nE 's/^  blas +OpenBLAS [^,]*, core ([A-Za-z0-9_]+).*/\1/p' "$1" | head -n1; }

# --- unset: the processor's kernels, named in the header and the result -----------------------
"${clean[@]}" timeout 60 "$serial" "${tiny[@]}" --out "$tmp/plain.h5" >"$tmp/plain.log" 2>&1 ||
  problem "exit status $? ($(tail -n 2 "$tmp/plain.log" | tr '\n' ' '))"
core=$(header_core "$tmp/plain.log")
[[ -n $core ]] || problem "no 'blas ... core X' line in the header"
grep -q '^  processor   ' "$tmp/plain.log" || problem "no processor line in the header"
grep -q '^  notice ' "$tmp/plain.log" && problem "a notice with OPENBLAS_CORETYPE unset: $(grep '^  notice' "$tmp/plain.log")"
report "with OPENBLAS_CORETYPE unset the header names the kernels ($core) and they are the processor's"

features=""
if ((have_h5py)) && [[ -f $tmp/plain.h5 ]]; then
  [[ $(attr "$tmp/plain.h5" blas_core) == "$core" ]] ||
    problem "blas_core '$(attr "$tmp/plain.h5" blas_core)' is not the header's '$core'"
  source_=$(attr "$tmp/plain.h5" blas_core_source)
  [[ $source_ == library || $source_ == mlpscale ]] || problem "blas_core_source '$source_'"
  for name in blas blas_config cpu_model cpu_features; do
    [[ -n $(attr "$tmp/plain.h5" "$name") ]] || problem "no $name attribute"
  done
  features=$(attr "$tmp/plain.h5" cpu_features)
  report "the result file records the BLAS, its core and the processor"
else
  skip "the result file records the BLAS, its core and the processor" "no h5py in .venv or no result file"
fi

# The library's fallback, and a user's older core, only mean something where newer kernels exist.
if [[ " $features " != *" avx "* ]]; then
  skip "a fallback is corrected" "this processor has no AVX ($features): Prescott-class kernels are its own"
else
  # --- the library's fallback: corrected by running again with the processor's core ----------
  "${clean[@]}" MLPSCALE_ASSUME_BLAS_CORE=Prescott timeout 60 "$serial" "${tiny[@]}" \
    --out "$tmp/fixed.h5" >"$tmp/fixed.log" 2>&1 || problem "exit status $? ($(tail -n 2 "$tmp/fixed.log" | tr '\n' ' '))"
  fixed=$(header_core "$tmp/fixed.log")
  [[ $fixed == "$core" ]] || problem "ran core '$fixed', not the processor's '$core'"
  grep -q 'chosen by mlpscale.*the library chose Prescott' "$tmp/fixed.log" ||
    problem "the header does not say the core was chosen over the library's Prescott: $(grep '^  blas' "$tmp/fixed.log")"
  if ((have_h5py)) && [[ -f $tmp/fixed.h5 ]]; then
    [[ $(attr "$tmp/fixed.h5" blas_core_source) == mlpscale ]] ||
      problem "blas_core_source '$(attr "$tmp/fixed.h5" blas_core_source)', not mlpscale"
  fi
  report "a fallback to Prescott is corrected before the run (bin/serial)"

  # Under mpiexec every rank runs again before MPI_Init, and the job trains and verifies.
  "${clean[@]}" MLPSCALE_ASSUME_BLAS_CORE=Prescott timeout 120 mpiexec -n 2 "$repo/bin/data" \
    "${tiny[@]}" --precision fp64 --verify --out "$tmp/data.h5" >"$tmp/data.log" 2>&1 ||
    problem "exit status $? ($(tail -n 2 "$tmp/data.log" | tr '\n' ' '))"
  grep -q 'verify: PASS' "$tmp/data.log" || problem "no 'verify: PASS'"
  [[ $(header_core "$tmp/data.log") == "$core" ]] || problem "ran core '$(header_core "$tmp/data.log")'"
  report "a fallback is corrected on every rank of mpiexec -n 2 bin/data, which still verifies"

  # --- the user's setting: kept, and explained when older than the processor's ---------------
  "${clean[@]}" OPENBLAS_CORETYPE=Prescott timeout 60 "$serial" "${tiny[@]}" \
    --out "$tmp/user.h5" >"$tmp/user.log" 2>&1 || problem "exit status $?"
  [[ $(header_core "$tmp/user.log") == Prescott ]] || problem "ran '$(header_core "$tmp/user.log")', not the user's Prescott"
  grep -q 'set by OPENBLAS_CORETYPE' "$tmp/user.log" || problem "the header does not say who set the core"
  grep -q "^  notice      the Prescott kernels are older than this processor's $core" "$tmp/user.log" ||
    problem "no notice that Prescott is older than $core"
  if ((have_h5py)) && [[ -f $tmp/user.h5 ]]; then
    [[ -n $(attr "$tmp/user.h5" blas_notice) ]] || problem "no blas_notice attribute"
  fi
  report "OPENBLAS_CORETYPE=Prescott is respected, reported and explained"
fi

# --- kernels the processor cannot run are refused, on every rank --------------------------------
if [[ " $features " == *" avx512_bf16 "* ]]; then
  skip "OPENBLAS_CORETYPE naming kernels this processor lacks is refused" \
    "this processor runs every core in the table (tests/unit/kernels/test_blas_core.cpp checks the refusal for others)"
elif [[ -n $features ]]; then
  status=0
  "${clean[@]}" OPENBLAS_CORETYPE=Cooperlake timeout 60 mpiexec -n 2 "$repo/bin/data" "${tiny[@]}" \
    --out "$tmp/refused.h5" >"$tmp/refused.out" 2>"$tmp/refused.err" || status=$?
  ((status == 2)) || problem "exit status $status, not 2"
  (($(grep -c 'error: OPENBLAS_CORETYPE=Cooperlake names kernels that need' "$tmp/refused.err") == 2)) ||
    problem "not one line per rank: $(head -c 400 "$tmp/refused.err" | tr '\n' '|')"
  [[ -e $tmp/refused.h5 ]] && problem "a result file was written"
  report "OPENBLAS_CORETYPE naming kernels this processor lacks is refused on every rank"
else
  skip "OPENBLAS_CORETYPE naming kernels this processor lacks is refused" \
    "no x86 extensions recorded for this processor: the x86 table does not apply"
fi

# --- bench_kernels: the kernels named, the FMA peak measured, GEMMs as % of it ------------------
"${clean[@]}" timeout 120 "$repo/bin/bench_kernels" --backends cpu --hidden 16 --layers 1 \
  --image-size 8 --batch 8 --benchmark_min_time=0.01 \
  --benchmark_filter='^(fma_peak/cpu/f32/|gemm/cpu/f32/NN/m:2048/)' \
  --benchmark_out="$tmp/kernels.json" --benchmark_out_format=json >"$tmp/kernels.log" 2>&1 ||
  problem "exit status $? ($(tail -n 2 "$tmp/kernels.log" | tr '\n' ' '))"
"$python" - "$tmp/kernels.json" "$core" >"$tmp/kernels.check" 2>&1 <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
ctx, runs = doc["context"], doc["benchmarks"]
errors = []
if sys.argv[2] and ctx.get("mlpscale_blas_core") != sys.argv[2]:
    errors.append(f"context core {ctx.get('mlpscale_blas_core')!r}, header's {sys.argv[2]!r}")
for key in ("mlpscale_blas", "mlpscale_cpu"):
    if not ctx.get(key): errors.append(f"no {key} in the context")
peak = [b for b in runs if b["name"].startswith("fma_peak/cpu/f32/")]
gemm = [b for b in runs if b["name"].startswith("gemm/cpu/f32/NN/m:2048/")]
if not peak or not peak[0].get("TFLOP/s", 0) > 0: errors.append("no positive fma_peak")
if not gemm: errors.append("no square GEMM")
for b in gemm:
    pct = b.get("% of peak")
    if pct is None or not 0 < pct <= 110: errors.append(f"{b['name']}: % of peak {pct}")
print("; ".join(errors))
sys.exit(1 if errors else 0)
EOF
(($? == 0)) || problem "$(tail -n 3 "$tmp/kernels.check" | tr '\n' ' ')"
report "bench_kernels names the kernels, measures the FMA peak and reports GEMMs as % of it"

finish
