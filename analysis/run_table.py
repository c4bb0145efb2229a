"""Prints one line per mlpscale result file: scheme, grid, ranks, median step, exposed
communication, collective bytes per iteration and peak memory, so that runs of one study can be
compared at a glance (e.g. DDP with and without overlap, ZeRO stages' memory).

usage: .venv/bin/python analysis/run_table.py FILE.h5 [FILE.h5 ...]
A file that is not a result file, or lacks a field, is reported by name and field; the exit
status is then 1.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from result_files import CommBench, ResultFileError, load_result  # noqa: E402
from run_stats import summarise  # noqa: E402


def describe(run):
    s = summarise(run)
    exposed = 0.0 if math.isnan(s.exposed_comm_s) else s.exposed_comm_s
    no_overlap = " no-overlap" if run.config.get("no-overlap") else ""
    volume = ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in s.comm_bytes.items()) or "none"
    return (f"{run.scheme:<8} {run.grid + no_overlap:<24} ranks {run.ranks}  "
            f"step {s.median_step_s * 1e3:9.2f} ms  exposed comm {exposed * 1e3:8.2f} ms  "
            f"peak memory {s.peak_memory_bytes / 1e6:8.2f} MB  comm/iter: {volume}")


def main(paths):
    status = 0
    for path in paths:
        try:
            result = load_result(path)
            if isinstance(result, CommBench):
                raise ResultFileError(path, "a bin/bench_comm file, not a training run")
            print(describe(result))
        except ResultFileError as e:
            print(e, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
