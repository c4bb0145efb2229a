"""Checks a bin/pipeline result file against the analytic pipeline volumes.

usage: check_pipeline_result.py FILE
Per iteration and rank (stage s of replica d, rank = d*P + s), at the recorded precision's
bytes per element (fp64 8, fp32 4, bf16/fp16 2, the data group 4 with fp32-grad-comm):
  sendrecv:pipe  every activation [rows_d x H] sent forward and its gradient sent back, counted
                 on both ends: 2 * rows_d * H * bytes per boundary between one of the rank's
                 virtual stages and a neighbour virtual stage on another rank (one chunk per
                 rank: a middle stage has two, the end stages one, a single stage none;
                 interleaved's v chunks about 2v; ZB-V's V keeps rank P-1's turn local);
  allreduce:data (D > 1) the parameter count of the rank's chunks * bytes: their gradients,
                 once;
  (an --inference file: per evaluated batch, activations forward only: rows_d * H * bytes per
  neighbour, no allreduce:data; --checkpoint-activations changes nothing: recompute is local;)
  /timing/bubble present, >= 0, and bubble + exposed_comm <= step (receive waits are bubble,
  not exposed communication: the two must not overlap).
Prints one line; exit status 1 on a mismatch.
"""
import json
import sys

import h5py
import numpy as np

from result_checks import comm_bytes, data_element_bytes, element_bytes, ffn_width, verdict


def virtual_stage_ranks(schedule, p, virtual_stages):
    """The rank holding each virtual stage (PipelineShape::rank_of)."""
    if schedule == "zb-v":
        return [vs if vs < p else 2 * p - 1 - vs for vs in range(virtual_stages)]
    return [vs % p for vs in range(virtual_stages)]


def stage_parameters(config, partition):
    h, s2, f = config["hidden"], config["image-size"] ** 2, ffn_width(config)
    block = h * h + h if config["block"] == "plain" else 2 * h + (h * f + f) + (f * h + h)
    counts = []
    for s, blocks in enumerate(partition):
        n = blocks * block
        if s == 0:
            n += s2 * h + h
        if s == len(partition) - 1:
            n += h * 10 + 10
        counts.append(n)
    return counts


def main():
    path = sys.argv[1]
    with h5py.File(path, "r") as f:
        # "pp=4,dp=1,micro_batches=8,schedule=1f1b,partition=1,1,1,1"
        head, blocks = f.attrs["grid"].split(",partition=")
        grid = dict(item.split("=", 1) for item in head.split(","))
        partition = [int(b) for b in blocks.split(",")]
        parameters = int(f.attrs["parameters"])
        config = json.loads(f.attrs["config_json"])
        inference = f.attrs["mode"] == "inference"
        recorded = {**config, "precision": f.attrs["precision"]}
        element, data_element = element_bytes(recorded), data_element_bytes(recorded)
        comm = comm_bytes(f)
        bubble = f["timing"]["bubble"][()] if "bubble" in f["timing"] else None
        exposed = f["timing"]["exposed_comm"][()]
        step = f["timing"]["step"][()]
    p, d = int(grid["pp"]), int(grid["dp"])
    batch, hidden = config["batch"], config["hidden"]
    problems = []
    params = stage_parameters(config, partition)
    if sum(params) != parameters:
        problems.append(f"stage parameters {params} do not sum to the model's")
    owner = virtual_stage_ranks(grid["schedule"], p, len(partition))
    expected = {}
    if p > 1:
        expected["sendrecv:pipe"] = np.zeros(p * d)
    if d > 1 and not inference:
        expected["allreduce:data"] = np.zeros(p * d)
    for rank in range(p * d):
        s, r = rank % p, rank // p
        rows = batch * (r + 1) // d - batch * r // d
        mine = [vs for vs in range(len(partition)) if owner[vs] == s]
        last = len(partition) - 1
        remote = sum((vs > 0 and owner[vs - 1] != s) + (vs < last and owner[vs + 1] != s)
                     for vs in mine)
        if p > 1:
            directions = 1 if inference else 2  # activations; and their gradients in training
            expected["sendrecv:pipe"][rank] = directions * remote * rows * hidden * element
        if d > 1 and not inference:
            expected["allreduce:data"][rank] = sum(params[vs] for vs in mine) * data_element
    if set(comm) != set(expected):
        problems.append(f"kinds {sorted(comm)} != {sorted(expected)}")
    else:
        for kind, want in expected.items():
            if not np.all(comm[kind] == want[None, :]):
                problems.append(f"{kind} bytes {np.unique(comm[kind])} != {np.unique(want)}")
    if bubble is None:
        problems.append("no /timing/bubble")
    elif np.any(bubble < 0) or np.any(bubble + exposed > step + 1e-6):
        problems.append("bubble + exposed communication outside [0, step] (counted twice?)")
    kinds = lambda: ", ".join(f"{k} {sorted({int(x) for x in v[0]})} B" for k, v in sorted(comm.items()))
    return verdict(path, problems,
                   lambda: f"volumes ok ({kinds() or 'no communication'}), bubble + exposed comm <= step")


if __name__ == "__main__":
    sys.exit(main())
