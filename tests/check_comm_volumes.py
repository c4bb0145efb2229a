"""Checks a bin/data result file's communication volumes against the analytic ones.

usage: check_comm_volumes.py FILE ZERO RANKS BUCKET_ELEMENTS
Every iteration must move (nccl-tests sizes, fp64): DDP one all-reduce of every gradient byte;
ZeRO-1/2 one reduce-scatter of every gradient byte and one all-gather of every parameter byte;
ZeRO-3 two all-gathers of every parameter byte and one reduce-scatter of every gradient byte.
Sharded stages pad each bucket (ZeRO-1/2) or unit (ZeRO-3) to a multiple of the ranks, so their
volumes may exceed the parameter bytes by at most RANKS-1 elements per bucket or unit.
Prints one line; exit status 1 on a mismatch.
"""
import sys

import h5py
import numpy as np

from result_checks import comm_bytes, verdict


def main():
    path, zero, ranks, bucket_elements = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with h5py.File(path, "r") as f:
        params = int(f.attrs["parameters"])
        layers = int(__import__("json").loads(f.attrs["config_json"])["layers"])
        comm = comm_bytes(f)
    exact = 8 * params
    tensors = 2 + 6 * layers + 2
    groups = (layers + 2) if zero == 3 else (params // bucket_elements + tensors + 1)
    slack = 8 * (ranks - 1) * groups
    expected_kinds = {0: {"allreduce"}, 1: {"allgather", "reduce_scatter"},
                      2: {"allgather", "reduce_scatter"}, 3: {"allgather", "reduce_scatter"}}[zero]
    problems = []
    if set(comm) != expected_kinds:
        problems.append(f"kinds {sorted(comm)} != {sorted(expected_kinds)}")
    else:
        for kind, table in comm.items():
            per_rank_equal = np.all(table == table[:, :1])
            if not per_rank_equal:
                problems.append(f"{kind} bytes differ between ranks")
        if zero == 0:
            if not np.all(comm["allreduce"] == exact):
                problems.append(f"allreduce {np.unique(comm['allreduce'])} != {exact}")
        else:
            rs = comm["reduce_scatter"]
            ag = comm["allgather"]
            if not np.all((rs >= exact) & (rs <= exact + slack)):
                problems.append(f"reduce_scatter {np.unique(rs)} outside [{exact}, {exact + slack}]")
            factor = 2 if zero == 3 else 1
            if not np.all(ag == factor * rs):
                problems.append(f"allgather {np.unique(ag)} != {factor} x reduce_scatter")
    return verdict(path, problems, lambda: "volumes ok (" + ", ".join(
        f"{k} {int(v[0, 0])} B" for k, v in sorted(comm.items())) + f"; parameters {exact} B)")


if __name__ == "__main__":
    sys.exit(main())
