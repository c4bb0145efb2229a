"""Checks bin/tensor3d result files against the analytic model, independently of the C++ code.

usage: check_tensor3d_volumes.py FILE
           every iteration's /comm/<kind>/bytes on every rank equal the formulas below exactly,
           the kinds present are exactly those the formulas make non-zero, group sizes match
       check_tensor3d_volumes.py memory FILE...   (one grid and model, different flags)
           peak memory minus the depth scratch the flags call for is the same in every file,
           rank by rank: the scratch is shared across layers as docs/tensor3d.md states
       check_tensor3d_volumes.py vs-tensor1d FILE_3D FILE_1D   ([G,1,1] vs --tp G, mlp blocks)
       check_tensor3d_volumes.py vs-zero3 FILE_3D FILE_DATA     ([1,1,G] vs bin/data --zero 3)
           the recorded bytes, minus the stated difference between the schemes, are equal

Formulas (nccl-tests sizes) from the file's config and grid "tp-dims=x,y,z,dp=D": G_r = x
(outer), G_c = y (inner), G_d = z (depth); b = B/(D*z) rows per rank; e bytes per element. The
pixels are sharded over outer and every Linear(K -> N) flips the axis (the embed transposed,
fc1 normal, fc2 transposed, ...). For a Linear with input group g_in, output group g_out,
k = K/g_in, n = ceil(N/g_out), block = n*k:
  allgather:depth       2*block*e (block*e with --cache-weights)
  allreduce:<in group>  b*n*e                 forward partial outputs
  allreduce:<out group> b*k*e                 dX, all but the embed
  reduce_scatter:depth  block*e               dW
LayerNorm over the group g sharding its input: allgather 2*b*g*e, allreduce 2*b*e; the logits:
allgather over the classifier's output group b*ceil(10/g)*g*e; vector gradients (biases, gamma,
beta slices) allreduce:depth; with D > 1 allreduce:data of every local element. Groups of one
rank communicate nothing.
With "checkpoint-activations" in the config each block's forward runs again before its
backward: its LayerNorm all-gather and each block Linear's forward all-reduce once more, and
fc1's allgather:depth once more unless --cache-weights (the block's last Linear, fc2 or a
plain block's fc, keeps the recompute's gathered W for its backward: no extra gather).
A file whose attribute mode is "inference" holds forward passes alone: allgather:depth
block*e once per Linear, the forward all-reduces, the LayerNorm all-gathers and the logits.
Prints one line; exit status 1 on a mismatch.
"""
import json
import re
import sys

import h5py
import numpy as np

from result_checks import (comm_groups, data_element_bytes, element_bytes, ffn_width, verdict,
                           zero3_units)

CLASSES = 10


def ceil_div(a, b):
    return -(-a // b)


def read(path):
    with h5py.File(path, "r") as f:
        attrs = {k: f.attrs[k] for k in f.attrs}
        config = json.loads(attrs["config_json"])
        comm = comm_groups(f)
        peak = f["memory/peak_bytes"][()]
    return attrs, config, comm, peak


def grid_of(attrs):
    """(outer, inner, depth, dp) from the grid attribute."""
    match = re.fullmatch(r"tp-dims=(\d+),(\d+),(\d+),dp=(\d+)", str(attrs["grid"]))
    if not match:
        raise ValueError(f"grid attribute '{attrs['grid']}' is not tp-dims=x,y,z,dp=D")
    return tuple(int(g) for g in match.groups())


def linears(config):
    """FC_Net's Linears in forward order: (name, K, N)."""
    h, s2 = config["hidden"], config["image-size"] ** 2
    f = ffn_width(config)
    out = [("embed", s2, h)]
    for l in range(config["layers"]):
        if config["block"] == "mlp":
            out += [(f"block{l}.fc1", h, f), (f"block{l}.fc2", f, h)]
        else:
            out.append((f"block{l}.fc", h, h))
    return out + [("classifier", h, CLASSES)]


def sharded_linears(config, grid):
    """Each Linear with its input axis, group sizes, k, n and block elements."""
    outer, inner = grid[0], grid[1]
    size = {"outer": outer, "inner": inner}
    flip = {"outer": "inner", "inner": "outer"}
    axis = "outer"  # the pixels
    out = []
    for name, K, N in linears(config):
        gi, go = size[axis], size[flip[axis]]
        k, n = K // gi, ceil_div(N, go)
        out.append(dict(name=name, K=K, N=N, in_axis=axis, out_axis=flip[axis], gi=gi, go=go,
                        k=k, n=n, block=n * k))
        axis = flip[axis]
    return out


def analytic(config, grid, cache_weights=None, mode="train"):
    """{kind: (bytes per iteration and rank, group size)} with zero-byte kinds left out;
    mode "inference": one forward pass."""
    outer, inner, depth, dp = grid
    if cache_weights is None:
        cache_weights = bool(config.get("cache-weights", False))
    train = mode == "train"
    if not train and mode != "inference":
        raise ValueError(f"mode '{mode}' is neither train nor inference")
    recompute = train and bool(config.get("checkpoint-activations", False))
    e = element_bytes(config)
    b = config["batch"] // (dp * depth)
    h = config["hidden"]
    size = {"outer": outer, "inner": inner, "depth": depth, "data": dp}
    v = {}

    def add(kind, amount):
        if size[kind.split(":")[1]] > 1:
            v[kind] = v.get(kind, 0) + amount

    vectors = weights = 0
    layers = sharded_linears(config, grid)
    for index, lin in enumerate(layers):
        name = lin["name"]
        if name.endswith(".fc1"):  # the block's LayerNorm runs on fc1's input layout
            g = size[lin["in_axis"]]
            add(f"allgather:{lin['in_axis']}", 2 * b * g * e * (2 if recompute else 1))
            if train:
                add(f"allreduce:{lin['in_axis']}", 2 * b * e)
            vectors += 2 * (h // g)
        rerun = recompute and name.startswith("block")
        gathers = 2 if train and not cache_weights else 1
        if rerun and not cache_weights and name.endswith(".fc1"):
            gathers += 1
        add("allgather:depth", gathers * lin["block"] * e)
        add(f"allreduce:{lin['in_axis']}", b * lin["n"] * e * (2 if rerun else 1))
        if train and index > 0:
            add(f"allreduce:{lin['out_axis']}", b * lin["k"] * e)
        if train:
            add("reduce_scatter:depth", lin["block"] * e)
        vectors += lin["n"]
        weights += lin["block"] // depth
    g = lin["go"]
    add(f"allgather:{lin['out_axis']}", b * ceil_div(CLASSES, g) * g * e)
    if train:
        add("allreduce:depth", vectors * e)
        add("allreduce:data", (vectors + weights) * data_element_bytes(config))
    return {kind: (amount, size[kind.split(":")[1]]) for kind, amount in v.items()}


def ring_bytes(kind, amount, group):
    """Bytes one rank sends on a ring: all-reduce 2(n-1)/n, all-gather/reduce-scatter (n-1)/n."""
    factor = 2 * (group - 1) / group if kind.startswith("allreduce") else (group - 1) / group
    return amount * factor


def scratch_bytes(config, grid, flags):
    """Depth scratch: gathered W (largest block, x2 with prefetch; every block with cache) and
    dW (largest block, x2 with deferred reduce-scatter); none at z = 1."""
    if grid[2] == 1:
        return 0
    blocks = [lin["block"] for lin in sharded_linears(config, grid)]
    gathered = sum(blocks) if flags["cache-weights"] else \
        max(blocks) * (2 if flags["prefetch-weights"] else 1)
    dw = max(blocks) * (2 if flags["defer-dw-reduce"] else 1)
    return (gathered + dw) * element_bytes(config)


def check_volumes(path):
    attrs, config, comm, _ = read(path)
    grid = grid_of(attrs)
    mode = str(attrs["mode"])
    want = analytic(config, grid, mode=mode)
    problems = []
    if set(comm) != set(want):
        problems.append(f"kinds {sorted(comm)} != {sorted(want)}")
    for kind in sorted(set(comm) & set(want)):
        table, group = comm[kind]
        amount, expected_group = want[kind]
        if table.size == 0 or not np.all(table == amount):
            problems.append(f"{kind} bytes {sorted(set(table.ravel().tolist()))} != {amount}")
        if group != expected_group:
            problems.append(f"{kind} group size {group} != {expected_group}")
    recompute = mode == "train" and config.get("checkpoint-activations", False)
    what = mode + (", checkpointed" if recompute else "")
    return verdict(path, problems, lambda: f"{what} volumes equal the formulas on every rank and "
                   "iteration (" + (", ".join(f"{k} {want[k][0]} B" for k in sorted(want))
                                    or "no collectives") + ")")


def check_memory(paths):
    base = None
    parts = []
    for path in paths:
        attrs, config, _, peak = read(path)
        grid = grid_of(attrs)
        flags = {k: bool(config.get(k, False)) for k in
                 ("cache-weights", "prefetch-weights", "defer-dw-reduce", "overlap-dx")}
        scratch = scratch_bytes(config, grid, flags)
        rest = peak.astype(np.int64) - scratch
        on = " ".join("--" + k for k, f in flags.items() if f) or "no flags"
        parts.append(f"{on}: peak {int(peak.max())} B, scratch {scratch} B")
        if base is None:
            base = rest
        elif rest.shape != base.shape or not np.all(rest == base):
            print(f"{path}: peak - scratch {sorted(set(rest.tolist()))} B != "
                  f"{sorted(set(base.tolist()))} B of {paths[0]} ({'; '.join(parts)})")
            return 1
    print(f"peak - depth scratch is the same {int(base.max())} B in every run (" +
          "; ".join(parts) + ")")
    return 0


def compare(name, got, want):
    """got, want: {kind: bytes table}; exact, element by element."""
    problems = []
    if set(got) != set(want):
        problems.append(f"{name}: kinds {sorted(got)} != {sorted(want)}")
    for kind in sorted(set(got) & set(want)):
        if got[kind].shape != want[kind].shape or not np.all(got[kind] == want[kind]):
            problems.append(f"{kind}: {sorted(set(got[kind].ravel().tolist()))} != "
                            f"{sorted(set(want[kind].ravel().tolist()))}")
    return problems


def same_model(a, b):
    keys = ("hidden", "layers", "ffn-mult", "ffn-hidden", "image-size", "block", "batch",
            "precision")
    return [k for k in keys if a.get(k) != b.get(k)]


def check_vs_tensor1d(path3d, path1d):
    """[G,1,1] vs tensor1d --tp G (mlp blocks, D = 1). Embed (row-parallel over S^2 in both),
    LayerNorm (replicated in both: inner has one rank) and the blocks' fc1/fc2 (column/row) move
    the same bytes. The classifier differs when G does not divide the 10 classes: tensor1d then
    replicates it (no communication), tensor3d pads it to ceil(10/G)*G outputs, column-parallel,
    adding allreduce:outer b*H*e (its dX) and allgather:outer b*ceil(10/G)*G*e (the logits)."""
    attrs, config, comm3, _ = read(path3d)
    attrs1, config1, comm1, _ = read(path1d)
    outer, inner, depth, dp = grid_of(attrs)
    grid1 = dict(item.split("=") for item in str(attrs1["grid"]).split(","))
    G = int(grid1["tp"])
    if (inner, depth, dp) != (1, 1, 1) or outer != G or int(grid1["dp"]) != 1:
        print(f"vs-tensor1d needs [G,1,1] and --tp G, both D = 1: {attrs['grid']}, {attrs1['grid']}")
        return 1
    if config["block"] != "mlp" or same_model(config, config1):
        print(f"vs-tensor1d needs one mlp model: differs in {same_model(config, config1)}")
        return 1
    e, b, h = element_bytes(config), config["batch"], config["hidden"]
    extra = {"allreduce:outer": 0, "allgather:outer": 0}
    if CLASSES % G:
        extra = {"allreduce:outer": b * h * e, "allgather:outer": b * ceil_div(CLASSES, G) * G * e}
    got = {kind.replace(":outer", ":tp"): table - extra.get(kind, 0) for kind, (table, _) in comm3.items()}
    got = {k: t for k, t in got.items() if np.any(t != 0)}
    want = {kind: table for kind, (table, _) in comm1.items()}
    problems = compare("tensor3d - classifier difference vs tensor1d", got, want)
    if problems:
        print(f"{path3d} vs {path1d}: " + "; ".join(problems))
        return 1
    print(f"[{G},1,1] minus the classifier difference {extra} equals tensor1d --tp {G}: " +
          ", ".join(f"{k} {int(t.ravel()[0])} B" for k, t in sorted(want.items())))
    return 0


def check_vs_zero3(path3d, pathdata):
    """[1,1,G] (no --cache-weights) vs bin/data --zero 3 on G ranks. ZeRO-3 gathers (twice) and
    reduce-scatters whole units, each padded to a multiple of G: the weights plus their biases
    and LayerNorm gamma/beta; tensor3d gathers and reduce-scatters the weights only and
    all-reduces the vectors over depth (allreduce:depth). So per iteration
    zero3 allgather = tensor3d allgather:depth + 2*(vectors + padding)*e and
    zero3 reduce_scatter = tensor3d reduce_scatter:depth + (vectors + padding)*e."""
    attrs, config, comm3, _ = read(path3d)
    attrsd, configd, commd, _ = read(pathdata)
    outer, inner, depth, dp = grid_of(attrs)
    G = int(attrsd["world_size"])
    if (outer, inner, dp) != (1, 1, 1) or depth != G or config.get("cache-weights"):
        print(f"vs-zero3 needs [1,1,G] without --cache-weights and G ranks: {attrs['grid']}, {G}")
        return 1
    if same_model(config, configd):
        print(f"vs-zero3 needs one model: differs in {same_model(config, configd)}")
        return 1
    e = element_bytes(config)
    difference = sum(ceil_div(p, G) * G - w for p, w in zero3_units(config))
    got = {"allgather": comm3["allgather:depth"][0] + 2 * difference * e,
           "reduce_scatter": comm3["reduce_scatter:depth"][0] + difference * e}
    want = {k: table for k, (table, _) in commd.items()}
    problems = compare("tensor3d + unit difference vs zero3", got, want)
    if problems:
        print(f"{path3d} vs {pathdata}: " + "; ".join(problems))
        return 1
    print(f"[1,1,{G}] plus (vectors + padding) = {difference} elements equals --zero 3 on {G} "
          f"ranks: " + ", ".join(f"{k} {int(t.ravel()[0])} B" for k, t in sorted(want.items())))
    return 0


def main(argv):
    try:
        if len(argv) == 2:
            return check_volumes(argv[1])
        if len(argv) >= 3 and argv[1] == "memory":
            return check_memory(argv[2:])
        if len(argv) == 4 and argv[1] == "vs-tensor1d":
            return check_vs_tensor1d(argv[2], argv[3])
        if len(argv) == 4 and argv[1] == "vs-zero3":
            return check_vs_zero3(argv[2], argv[3])
    except (OSError, KeyError, ValueError) as error:
        print(f"cannot check: {error}")
        return 1
    print(__doc__.split("\n\n")[1])
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
