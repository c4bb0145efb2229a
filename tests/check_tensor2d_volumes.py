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
"data"). e is 8 (fp64), 4 (fp32) or 2 (bf16, fp16: 16-bit payloads; "data" stays 4 with
fp32-grad-comm). A rank's local parameter elements: for each Linear part(N, q, j)*part(K, q, i) weight
and part(N, q, j) bias elements, and 2*part(H, q, j) per LayerNorm. At q = 1 only
allreduce:data remains (a group of one rank communicates nothing).
With "checkpoint-activations" every block's forward runs twice per step (the recompute before
its backward; the embed and the classifier once): for each block Linear one more b*K*e on
broadcast:row and n*K*e on broadcast:col, and L*q*2b*e more on allgather:row.
With "inference" each batch is one forward pass: broadcast:row sum of b*K*e, broadcast:col
sum of n*K*e, allgather:row as above, nothing else (at q = 1 nothing at all).
Prints one line; exit status 1 on a mismatch.
"""
import json
import re
import sys

import h5py
import numpy as np

from result_checks import (comm_groups, data_element_bytes, element_bytes, ffn_width,
                           group_size_problems, verdict)


def part(n, parts, r):
    return n // parts + (1 if r < n % parts else 0)


def ceil_div(a, b):
    return -(-a // b)


def analytic(config, q, dp, d, i, j):
    """The volumes of the rank at replica d, grid row i, grid column j."""
    e, e_data = element_bytes(config), data_element_bytes(config)
    hidden, layers, classes = config["hidden"], config["layers"], 10
    features = config["image-size"] ** 2
    ffn = ffn_width(config)
    mlp = config["block"] == "mlp"
    inference = config.get("inference", False)
    # Forward passes of each block per step: the recompute adds one in training.
    block_forwards = 2 if config.get("checkpoint-activations") and not inference else 1
    b = part(config["batch"], dp * q, d * q + i)
    linears = [(features, hidden)]
    for _ in range(layers):
        linears += [(hidden, ffn), (ffn, hidden)] if mlp else [(hidden, hidden)]
    linears.append((hidden, classes))
    v = {"broadcast:row": 0, "broadcast:col": 0}
    if not inference:
        v.update({"reduce_scatter:row": 0, "reduce_scatter:col": 0})
    data = {}
    vectors = 0
    weights = 0
    for index, (K, N) in enumerate(linears):
        k0, n = ceil_div(K, q), part(N, q, j)
        forwards = block_forwards if 0 < index < len(linears) - 1 else 1
        v["broadcast:row"] += forwards * b * K * e
        v["broadcast:col"] += forwards * n * K * e
        vectors += n
        weights += n * part(K, q, i)
        if inference:
            continue
        v["broadcast:row"] += b * K * e  # X blocks for dW
        if index > 0:
            v["broadcast:col"] += n * K * e  # W blocks for dX
            v["reduce_scatter:row"] += q * b * k0 * e
        v["reduce_scatter:col"] += q * n * k0 * e
    norm_blocks = layers if mlp else 0
    v["allgather:row"] = (block_forwards * norm_blocks * q * 2 * b * e +
                          q * b * ceil_div(classes, q) * e)
    if inference:
        return {} if q == 1 else v
    if norm_blocks:
        v["allreduce:row"] = norm_blocks * 2 * b * e
    vectors += norm_blocks * 2 * part(hidden, q, j)
    v["allreduce:col"] = vectors * e
    if dp > 1:
        data["allreduce:data"] = (weights + vectors) * e_data
    return data if q == 1 else {**v, **data}


def main():
    path = sys.argv[1]
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["config_json"])
        grid = f.attrs["grid"]
        comm = comm_groups(f)
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
        table, _ = comm[kind]  # [iterations x ranks]
        if table.ndim != 2 or table.shape[1] != ranks:
            problems.append(f"{kind} bytes table shape {table.shape} is not [iterations x {ranks}]")
            continue
        for r in range(ranks):
            if not np.all(table[:, r] == want[r][kind]):
                problems.append(f"{kind} rank {r} bytes {sorted(set(table[:, r].tolist()))} != "
                                f"{want[r][kind]}")
    problems += group_size_problems(comm, q, dp)
    distinct = {kind: sorted({w[kind] for w in want}) for kind in want[0]}
    return verdict(path, problems, lambda: "volumes equal the formulas on every rank (" + (", ".join(
        f"{k} {'/'.join(str(x) for x in distinct[k])} B" for k in sorted(distinct))
        or "no collectives") + ")")


if __name__ == "__main__":
    sys.exit(main())
