#!/usr/bin/env bash
# The CPU BLAS choice, measured (docs/cpu-blas.md): bin/bench_kernels' f32 GEMMs at a model's
# shapes (each Linear's forward, input- and weight-gradient GEMMs, plus the 2048^3 square) under
#   openblas   OpenBLAS with the kernels mlpscale runs (the processor's own),
#   prescott   OpenBLAS forced to its SSE3 Prescott kernels (what 0.3.21 falls back to on
#              processors it does not know),
#   blis       BLIS (Debian's libblis4-openmp, kernels chosen by CPU features) in place of
#              OpenBLAS's cblas_sgemm through LD_PRELOAD, in the same benchmark binary,
# on 1 and 2 threads, at each --batch of ROWS. Prints one table per thread count: GFLOP/s and
# % of the one-core FMA peak times the threads. Needs bin/bench_kernels and .venv (make deps);
# BLIS only where installed (apt-get install libblis4-openmp), else its column is left out.
# Usage: bash bench/blas_libraries.sh [--hidden H --layers L --image-size S ...] [ROWS...]
#   default: the tutorial model (H 2048, L 4, S 64) at 8 32 128 1024 rows.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model=(--hidden 2048 --layers 4 --image-size 64)
rows=()
# (BLIS's JSON context still names OpenBLAS's core: OpenBLAS is loaded, only its GEMMs are not run.)
while (($# > 0)); do
  case $1 in
    --hidden|--layers|--image-size|--ffn-mult|--ffn-hidden|--block) model+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) [[ $1 =~ ^[0-9]+$ ]] || { echo "blas_libraries: unknown argument '$1'" >&2; exit 2; }
       rows+=("$1"); shift ;;
  esac
done
((${#rows[@]})) || rows=(8 32 128 1024)
[[ -x bin/bench_kernels ]] || { echo "blas_libraries: bin/bench_kernels not built (run make)" >&2; exit 1; }
blis=$(ls /usr/lib/*/blis-openmp/libblis.so.4 2>/dev/null | head -n1 || true)
out=results/bench/blas
mkdir -p "$out"
libraries=(openblas prescott)
[[ -n $blis ]] && libraries+=(blis) || echo "blas_libraries: BLIS not installed: left out"

for threads in 1 2; do
  for r in "${rows[@]}"; do
    for lib in "${libraries[@]}"; do
      envs=(env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
            BLIS_NUM_THREADS=$threads)
      case $lib in
        prescott) envs+=(OPENBLAS_CORETYPE=Prescott) ;;
        blis) envs+=(LD_PRELOAD=$blis) ;;
      esac
      "${envs[@]}" bin/bench_kernels "${model[@]}" --batch "$r" --backends cpu \
        --benchmark_filter='^(gemm/cpu/f32/|fma_peak/cpu/f32/)' --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true \
        --benchmark_out="$out/$lib-t$threads-rows$r.json" --benchmark_out_format=json \
        >"$out/$lib-t$threads-rows$r.log" 2>&1 || { tail -n 3 "$out/$lib-t$threads-rows$r.log"; exit 1; }
    done
  done
done

# The medians, a table per thread count, and per row count the step's GEMM time: each shape's
# flops times its uses per step (bench_kernels' label) at its rate.
.venv/bin/python - "$out" "${rows[*]}" "${libraries[*]}" <<'EOF'
import json, re, sys
out, rows, libs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
ctx = json.load(open(f"{out}/openblas-t1-rows{rows[0]}.json"))["context"]
print(f"openblas: {ctx.get('mlpscale_blas')}\nprocessor: {ctx.get('mlpscale_cpu')}")
for threads in (1, 2):
    print(f"\nf32 GEMMs, {threads} thread(s): GFLOP/s (% of the FMA peak x {threads})")
    print(f"  {'shape':36s}" + "".join(f"{lib:>17s}" for lib in libs))
    for r in rows:
        tables, step = {}, {lib: 0.0 for lib in libs}
        for lib in libs:
            for b in json.load(open(f"{out}/{lib}-t{threads}-rows{r}.json"))["benchmarks"]:
                if b.get("aggregate_name") != "median" or not b["run_name"].startswith("gemm/"):
                    continue
                gflops = b["TFLOP/s"] * 1e3
                tables.setdefault(b["run_name"], {})[lib] = (gflops, b.get("% of peak", 0))
                uses = re.match(r"(\d+)x per step", b.get("label", ""))
                m, n, k = map(int, re.findall(r"[mnk]:(\d+)", b["run_name"]))
                if uses: step[lib] += int(uses.group(1)) * 2 * m * n * k / (gflops * 1e9)
        for name, by_lib in tables.items():
            if "m:2048/n:2048/k:2048" in name and r != rows[0]: continue
            cells = "".join(f"{by_lib[l][0]:9.1f} ({by_lib[l][1]:3.0f}%)" if l in by_lib
                            else f"{'-':>17s}" for l in libs)
            print(f"  {name[len('gemm/cpu/f32/'):]:36s}{cells}")
        print(f"  {'step GEMMs at ' + r + ' rows, ms':36s}" +
              "".join(f"{step[l] * 1e3:17.2f}" for l in libs))
EOF
