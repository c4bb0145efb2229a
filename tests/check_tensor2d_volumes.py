"""Checks a bin/tensor2d result file's communication volumes against the analytic ones.

usage: check_tensor2d_volumes.py FILE
From the file's resolved config and grid (tp-dims=q,q,dp=D), with b = B/(D*q) rows per rank,
e bytes per element and, for each Linear(K -> N), k = K/q, n = ceil(N/q), every rank must
record in every iteration exactly (nccl-tests sizes):
  broadcast:row       sum over Linears of 2*q*b*k*e            (X blocks: forward and dW)
  broadcast:col       sum of q*n*k*e, twice except the embed   (W blocks: forward and dX)
  reduce_scatter:row  sum over Linears but the embed of q*b*k*e (dX partials)
  reduce_scatter:col  sum of q*n*k*e                           (dW partials)
  allgather:row       L*q*2b*e + q*b*ceil(10/q)*e              (LayerNorm moments, logits)
  allreduce:row       L*2b*e                                   (LayerNorm backward sums)
  allreduce:col       (sum of n + L*2*H/q)*e                   (bias, gamma, beta slices)
  allreduce:data      every local parameter element * e        (only when D > 1)
where L counts the residual blocks (0 for --block plain), and each group has q ranks (D for
"data"). At q = 1 only allreduce:data remains (a group of one rank communicates nothing).
Prints one line; exit status 1 on a mismatch.
"""
import json
import re
import sys

import h5py
import numpy as np


def ceil_div(a, b):
    return -(-a // b)


def analytic(config, q, dp):
    e = 8 if config["precision"] == "fp64" else 4
    hidden, layers, classes = config["hidden"], config["layers"], 10
    features = config["image-size"] ** 2
    ffn = config["ffn-mult"] * hidden
    mlp = config["block"] == "mlp"
    b = config["batch"] // (dp * q)
    linears = [(features, hidden)]
    for _ in range(layers):
        linears += [(hidden, ffn), (ffn, hidden)] if mlp else [(hidden, hidden)]
    linears.append((hidden, classes))
    v = {"broadcast:row": 0, "broadcast:col": 0, "reduce_scatter:row": 0,
         "reduce_scatter:col": 0}
    data = {}
    vectors = 0
    weights = 0
    for index, (K, N) in enumerate(linears):
        k, n = K // q, ceil_div(N, q)
        v["broadcast:row"] += 2 * q * b * k * e
        v["broadcast:col"] += (1 if index == 0 else 2) * q * n * k * e
        if index > 0:
            v["reduce_scatter:row"] += q * b * k * e
        v["reduce_scatter:col"] += q * n * k * e
        vectors += n
        weights += n * k
    norm_blocks = layers if mlp else 0
    v["allgather:row"] = norm_blocks * q * 2 * b * e + q * b * ceil_div(classes, q) * e
    if norm_blocks:
        v["allreduce:row"] = norm_blocks * 2 * b * e
    vectors += norm_blocks * 2 * (hidden // q)
    v["allreduce:col"] = vectors * e
    if dp > 1:
        data["allreduce:data"] = (weights + vectors) * e
    return data if q == 1 else {**v, **data}


def main():
    path = sys.argv[1]
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["config_json"])
        grid = f.attrs["grid"]
        comm = {kind: (f["comm"][kind]["bytes"][()], int(f["comm"][kind].attrs["group_size"]))
                for kind in f["comm"]}
    match = re.fullmatch(r"tp-dims=(\d+),(\d+),dp=(\d+)", grid)
    if not match:
        print(f"{path}: grid attribute '{grid}' is not tp-dims=q,q,dp=D")
        return 1
    q, dp = int(match.group(1)), int(match.group(3))
    want = analytic(config, q, dp)
    problems = []
    if set(comm) != set(want):
        problems.append(f"kinds {sorted(comm)} != {sorted(want)}")
    for kind in sorted(set(comm) & set(want)):
        table, group = comm[kind]
        if not np.all(table == want[kind]):
            problems.append(f"{kind} bytes {sorted(set(table.ravel().tolist()))} != {want[kind]}")
        expected_group = dp if kind.endswith(":data") else q
        if group != expected_group:
            problems.append(f"{kind} group size {group} != {expected_group}")
    if problems:
        print(f"{path}: " + "; ".join(problems))
        return 1
    print("volumes equal the formulas (" +
          (", ".join(f"{k} {want[k]} B" for k in sorted(want)) or "no collectives") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
