"""Checks a bin/data result file's communication volumes against the analytic ones.

usage: check_comm_volumes.py FILE ZERO RANKS BUCKET_ELEMENTS [SHARD_GROUP]
Every iteration must move (nccl-tests sizes, fp64): DDP one all-reduce of every gradient byte;
ZeRO-1/2 one reduce-scatter of every gradient byte and one all-gather of every parameter byte;
ZeRO-3 two all-gathers of every parameter byte and one reduce-scatter of every gradient byte.
Sharded stages pad each bucket (ZeRO-1/2) or unit (ZeRO-3) to a multiple of the ranks, so their
volumes may exceed the parameter bytes by at most RANKS-1 elements per bucket or unit.
With SHARD_GROUP G (ZeRO-3 only) the bytes must equal hybrid sharding's exactly, per communicator
(hybrid_expected).
Prints one line; exit status 1 on a mismatch.
"""
import json
import sys

import h5py
import numpy as np

from result_checks import comm_bytes, comm_groups, verdict, zero3_units


def hybrid_expected(config, ranks, group):
    """{comm key: (bytes, group size)} per rank per iteration of --zero 3 --shard-group G in
    fp64: each unit padded to a multiple of G, U elements in all; all-gathers of 2U and
    reduce-scatters of U within the group, an all-reduce of the shard, U/G, across the N/G
    groups. A communicator of all ranks is "world" (bare kinds); a group of one rank among
    several has none."""
    padded = 8 * sum(-(-p // group) * group for p, _ in zero3_units(config))
    want = {}
    if group > 1 or ranks == 1:
        suffix = "" if group == ranks else ":shard"
        want["allgather" + suffix] = (2 * padded, group)
        want["reduce_scatter" + suffix] = (padded, group)
    if group < ranks:
        want["allreduce" + ("" if group == 1 else ":data")] = (padded // group, ranks // group)
    return want


def check_hybrid(path, ranks, group):
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["config_json"])
        comm = comm_groups(f)
    want = hybrid_expected(config, ranks, group)
    problems = []
    if set(comm) != set(want):
        problems.append(f"kinds {sorted(comm)} != {sorted(want)}")
    else:
        for key, (table, size) in sorted(comm.items()):
            if not np.all(table == want[key][0]):
                problems.append(f"{key} {np.unique(table)} != {want[key][0]}")
            if size != want[key][1]:
                problems.append(f"{key} group size {size} != {want[key][1]}")
    return verdict(path, problems, lambda: f"hybrid volumes ok (G={group}: " + ", ".join(
        f"{k} {b} B over {n}" for k, (b, n) in sorted(want.items())) + " ranks, on every rank)")


def main():
    path, zero, ranks, bucket_elements = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if len(sys.argv) > 5:
        if zero != 3:
            print(f"{path}: SHARD_GROUP needs ZERO 3")
            return 1
        return check_hybrid(path, ranks, int(sys.argv[5]))
    with h5py.File(path, "r") as f:
        params = int(f.attrs["parameters"])
        layers = int(json.loads(f.attrs["config_json"])["layers"])
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
