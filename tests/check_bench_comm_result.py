"""Checks a bin/bench_comm result file.

usage: check_bench_comm_result.py FILE RANKS DATATYPE OPS...
Prints the problems found on one line (nothing when there are none); exit status 1 if any.
"""
import math, sys
import h5py
import numpy as np

from result_checks import run_checks


def check(problems):
    path, ranks, datatype, ops = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    element = {"float": 4, "double": 8}[datatype]
    factor = {"allreduce": 2 * (ranks - 1) / ranks, "allgather": (ranks - 1) / ranks,
              "reduce_scatter": (ranks - 1) / ranks, "broadcast": 1.0, "sendrecv": 1.0}
    with h5py.File(path, "r") as f:
        a = f.attrs
        for name, expected in [("kind", "bench_comm"), ("ranks", ranks), ("datatype", datatype),
                               ("backend", "mpi"), ("device", "cpu")]:
            if a.get(name) != expected:
                problems.append(f"attribute {name} is {a.get(name)!r}, expected {expected!r}")
        evict = a.get("evict_bytes")
        if not isinstance(evict, (int, np.integer)) or evict < 0:
            problems.append(f"attribute evict_bytes is {evict!r}, expected a count of bytes")
        for name in ["hosts", "command_line", "git_commit", "mpi_version", "start_time"]:
            if not isinstance(a.get(name), str) or not a.get(name):
                problems.append(f"attribute {name} missing or empty")
        if sorted(f.keys()) != sorted(ops):
            problems.append(f"groups {sorted(f.keys())}, expected {sorted(ops)}")
        for op in ops:
            if op not in f:
                continue
            g = f[op]
            d = {k: g[k][()] for k in ["bytes", "count", "time_seconds", "algbw", "busbw", "wrong"]
                 if k in g}
            if len(d) != 6:
                problems.append(f"/{op} has datasets {sorted(g.keys())}")
                continue
            n = len(d["bytes"])
            if n == 0 or any(len(v) != n for v in d.values()):
                problems.append(f"/{op} dataset lengths {[len(v) for v in d.values()]}")
                continue
            if any(w != 0 for w in d["wrong"]):
                problems.append(f"/{op}/wrong is {d['wrong'].tolist()}")
            unit = element * (ranks if op in ("allgather", "reduce_scatter") else 1)
            for i in range(n):
                b, t = int(d["bytes"][i]), float(d["time_seconds"][i])
                if b % unit or d["count"][i] * element != b or (i and b <= d["bytes"][i - 1]):
                    problems.append(f"/{op} size {i}: bytes {b}, count {d['count'][i]}")
                    break
                if not (t > 0 and math.isfinite(t)):
                    problems.append(f"/{op}/time_seconds[{i}] = {t}")
                    break
                algbw = b / t / 1e9
                if abs(d["algbw"][i] - algbw) > 1e-9 * algbw or \
                        abs(d["busbw"][i] - algbw * factor[op]) > 1e-9 * algbw:
                    problems.append(f"/{op} size {i}: algbw {d['algbw'][i]}, busbw {d['busbw'][i]}"
                                    f" for {b} B in {t} s")
                    break


if __name__ == "__main__":
    run_checks(check)
