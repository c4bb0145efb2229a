"""Prints one line per mlpscale result file: scheme, grid, ranks, median step, exposed
communication, collective bytes per iteration and peak memory, so that runs of one study can be
compared at a glance (e.g. DDP with and without overlap, ZeRO stages' memory).

usage: .venv/bin/python analysis/run_table.py FILE.h5 [FILE.h5 ...]
A file that is not a result file, or lacks a field, is reported by name and field; the exit
status is then 1.
"""
import sys

import h5py
import numpy as np


def median_of_slowest(table, warmup):
    """Median over timed iterations of the slowest rank's value."""
    rows = np.asarray(table)[warmup:]
    return float(np.median(rows.max(axis=1))) if rows.size else float("nan")


def describe(path):
    with h5py.File(path, "r") as f:
        warmup = int(f.attrs["warmup_iterations"])
        step = median_of_slowest(f["timing/step"], warmup)
        exposed = median_of_slowest(f["timing/exposed_comm"], warmup) if "exposed_comm" in f["timing"] else 0.0
        comm = {k: median_of_slowest(f["comm"][k]["bytes"], warmup) for k in f["comm"]}
        peak = int(np.max(f["memory/peak_bytes"][()]))
        cmd = f.attrs["command_line"]
        no_overlap = " no-overlap" if "--no-overlap" in cmd else ""
        volume = ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(comm.items())) or "none"
        return (f"{f.attrs['scheme']:<8} {f.attrs['grid'] + no_overlap:<24} ranks {int(f.attrs['world_size'])}  "
                f"step {step * 1e3:9.2f} ms  exposed comm {exposed * 1e3:8.2f} ms  "
                f"peak memory {peak / 1e6:8.2f} MB  comm/iter: {volume}")


def main(paths):
    status = 0
    for path in paths:
        try:
            print(describe(path))
        except (OSError, KeyError) as e:
            print(f"{path}: not a complete mlpscale result file ({e})", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
