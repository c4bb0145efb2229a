"""Checks a bin/tensor2d result file's communication volumes against the analytic ones.

usage: check_tensor2d_volumes.py FILE
Every dimension is split by one rule: n over p parts gives part r n//p elements plus one when
r < n % p. From the file's resolved config and grid (tp-dims=q,q,dp=D), world rank
r = d*q*q + i*q + j (replica d, grid row i, grid column j), with b = part(B, D*q, d*q + i) rows,
e bytes per element and, for each Linear(K -> N), n = part(N, q, j) and k0 = ceil(K/q) (the
largest part, to which reduce-scatters pad), rank r must record in every iteration exactly
(nccl-tests sizes):
  broadcast:row       sum over Linears of 2*b*K*e              (X blocks: forward and dW)
  broadcast:col       sum of n*K*e, twice except the embed     (W blocks: forward and dX)
  reduce_scatter:row  sum over Linears but the embed of q*b*k0*e (dX partials)
  reduce_scatter:col  sum of q*n*k0*e                          (dW partials)
  allgather:row       L*q*2b*e + q*b*ceil(10/q)*e              (LayerNorm moments, logits)
  allreduce:row       L*2b*e                                   (LayerNorm backward sums)
  allreduce:col       (sum of n + L*2*part(H, q, j))*e         (bias, gamma, beta parts)
  allreduce:data      every local parameter element * e        (only when D > 1)
where L counts the residual blocks (0 for --block plain), and each group has q ranks (D for
"data"). A rank's local parameter elements: for each Linear part(N, q, j)*part(K, q, i) weight
and part(N, q, j) bias elements, and 2*part(H, q, j) per LayerNorm. At q = 1 only
allreduce:data remains (a group of one rank communicates nothing).
Prints one line; exit status 1 on a mismatch.
"""
import json
import re
import sys

import h5py
import numpy as np


def part(n, parts, r):
    return n // parts + (1 if r < n % parts else 0)


def ceil_div(a, b):
    return -(-a // b)


def analytic(config, q, dp, d, i, j):
    """The volumes of the rank at replica d, grid row i, grid column j."""
    e = 8 if config["precision"] == "fp64" else 4
    hidden, layers, classes = config["hidden"], config["layers"], 10
    features = config["image-size"] ** 2
    ffn = config["ffn-mult"] * hidden
    mlp = config["block"] == "mlp"
    b = part(config["batch"], dp * q, d * q + i)
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
        k0, n = ceil_div(K, q), part(N, q, j)
        v["broadcast:row"] += 2 * b * K * e
        v["broadcast:col"] += (1 if index == 0 else 2) * n * K * e
        if index > 0:
            v["reduce_scatter:row"] += q * b * k0 * e
        v["reduce_scatter:col"] += q * n * k0 * e
        vectors += n
        weights += n * part(K, q, i)
    norm_blocks = layers if mlp else 0
    v["allgather:row"] = norm_blocks * q * 2 * b * e + q * b * ceil_div(classes, q) * e
    if norm_blocks:
        v["allreduce:row"] = norm_blocks * 2 * b * e
    vectors += norm_blocks * 2 * part(hidden, q, j)
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
    ranks = q * q * dp
    want = [analytic(config, q, dp, r // (q * q), r % (q * q) // q, r % q) for r in range(ranks)]
    problems = []
    if set(comm) != set(want[0]):
        problems.append(f"kinds {sorted(comm)} != {sorted(want[0])}")
    for kind in sorted(set(comm) & set(want[0])):
        table, group = comm[kind]  # [iterations x ranks]
        if table.ndim != 2 or table.shape[1] != ranks:
            problems.append(f"{kind} bytes table shape {table.shape} is not [iterations x {ranks}]")
            continue
        for r in range(ranks):
            if not np.all(table[:, r] == want[r][kind]):
                problems.append(f"{kind} rank {r} bytes {sorted(set(table[:, r].tolist()))} != "
                                f"{want[r][kind]}")
        expected_group = dp if kind.endswith(":data") else q
        if group != expected_group:
            problems.append(f"{kind} group size {group} != {expected_group}")
    if problems:
        print(f"{path}: " + "; ".join(problems))
        return 1
    distinct = {kind: sorted({w[kind] for w in want}) for kind in want[0]}
    print("volumes equal the formulas on every rank (" +
          (", ".join(f"{k} {'/'.join(str(x) for x in distinct[k])} B" for k in sorted(distinct))
           or "no collectives") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
