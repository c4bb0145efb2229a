"""The GPU check's table (tests/gpu_check.sh): per bench_kernels JSON file, one line per GEMM
type with the rate of a training step's GEMMs (each shape weighted by its uses per step) and the
square GEMM's; then one line per result file with its precision, the GEMM call it made, the
measured median step against the prediction in the file (its /prediction group, from --machine)
and the peak memory against the estimate, and the --verify verdict where there is one. The
measured figures come from analysis/run_stats.py, as every plot reads them.

usage: python3 tests/gpu_check_summary.py [KERNELS.json ...] FILE.h5 [FILE.h5 ...]
Exit status 1 when a file cannot be read or a verification failed.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))

from plan_accuracy import read_prediction  # noqa: E402
from result_files import ResultFileError, load_result  # noqa: E402
from run_stats import summarise  # noqa: E402


def ratio(measured, predicted):
    return f"{measured / predicted:6.2f}" if predicted > 0 else "     -"


def gemm_lines(path):
    """A bench_kernels file's lines: per type, a step's GEMMs and the square one."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    types = {}
    for b in runs:
        parts = b.get("run_name", b["name"]).split("/")
        if parts[0] != "gemm" or b.get("run_type", "iteration") != "iteration":
            continue
        t = types.setdefault(parts[2], {"square": 0.0, "flops": 0.0, "seconds": 0.0})
        rate = float(b["TFLOP/s"]) * 1e12
        label = b.get("label", "")
        if label == "square":
            t["square"] = rate
            continue
        m, n, k = (int(x) for x in re.findall(r"[mnk]:(\d+)", b["name"]))
        uses = re.match(r"(\d+)x per step", label)
        if uses and rate > 0:
            flops = 2.0 * m * n * k * int(uses.group(1))
            t["flops"] += flops
            t["seconds"] += flops / rate
    missing = [kind for kind in ("f32", "tf32", "bf16") if kind not in types]
    if missing:
        raise ValueError(f"no {' or '.join(missing)} GEMMs in it")
    name = os.path.basename(path)[:-5]
    return [f"{name:<22} {kind:<9} a step's GEMMs at "
            f"{t['flops'] / t['seconds'] / 1e12 if t['seconds'] else 0:6.1f} TFLOP/s "
            f"({t['seconds'] * 1e3:8.3f} ms), the square one at {t['square'] / 1e12:6.1f}"
            for kind, t in types.items()]


def rate_lines(path):
    """A bench_kernels file without GEMMs (copies, offloaded updates): a line each, its GB/s."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    lines = [f"{b.get('run_name', b['name']):<40} {float(b['GB/s']):8.2f} GB/s" for b in runs
             if b.get("run_type", "iteration") == "iteration" and "GB/s" in b]
    if not lines:
        raise ValueError("no GB/s rates in it")
    return lines


def kernel_lines(path):
    with open(path) as f:
        names = [b["name"] for b in json.load(f)["benchmarks"]]
    return gemm_lines(path) if any(n.startswith("gemm/") for n in names) else rate_lines(path)


def line(path):
    """The file's line, its GEMM call and whether its verification failed."""
    run = load_result(path)
    s = summarise(run)
    p = read_prediction(path) or {}
    step_p = float(p.get("step_seconds", 0.0))
    peak_p = float(p.get("peak_bytes", 0.0))
    verdict = run.verification.get("verdict", "") if run.verification else ""
    shown = f"  verify {verdict}" if verdict in ("PASS", "FAIL") else ""
    precision = f"{run.attrs.get('precision', '?')}/{run.attrs.get('gemm_math', '?')}"
    text = (f"{os.path.basename(path)[:-3]:<22} {precision:<9} "
            f"step {s.median_step_s * 1e3:8.3f} ms, predicted {step_p * 1e3:8.3f} "
            f"(x{ratio(s.median_step_s, step_p)})  "
            f"peak {s.peak_memory_bytes / 2**20:8.1f} MiB, predicted {peak_p / 2**20:8.1f} "
            f"(x{ratio(s.peak_memory_bytes, peak_p)}){shown}")
    return text, run.attrs.get("gemm_call", "?"), verdict == "FAIL"


def main(paths):
    status = 0
    calls = []
    for path in paths:
        if path.endswith(".json"):
            try:
                for text in kernel_lines(path):
                    print(text)
            except (OSError, KeyError, ValueError) as e:
                print(f"{path}: cannot summarise ({e})")
                status = 1
            continue
        try:
            text, call, failed = line(path)
        except (ResultFileError, OSError, KeyError, ValueError) as e:
            print(f"{path}: cannot summarise ({e})")
            status = 1
            continue
        print(text)
        if call not in calls:
            calls.append(call)
        if failed:
            status = 1
    if calls:
        print("GEMM calls: " + "; ".join(calls))
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
