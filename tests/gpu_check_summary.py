"""The GPU check's table (tests/gpu_check.sh): one line per result file with its precision, the
GEMM call it made, the measured median step against the prediction in the file (its
/prediction group, from --machine) and the peak memory against the estimate, and the --verify
verdict where there is one. The measured figures come from analysis/run_stats.py, as every plot
reads them.

usage: python3 tests/gpu_check_summary.py FILE.h5 [FILE.h5 ...]
Exit status 1 when a file cannot be read or a verification failed.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))

from plan_accuracy import read_prediction  # noqa: E402
from result_files import ResultFileError, load_result  # noqa: E402
from run_stats import summarise  # noqa: E402


def ratio(measured, predicted):
    return f"{measured / predicted:6.2f}" if predicted > 0 else "     -"


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
