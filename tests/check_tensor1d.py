"""Checks bin/tensor1d result files against the analytic model of docs/tensor1d.md.

usage: check_tensor1d.py volumes FILE
           every iteration's /comm bytes on every rank equal the formulas exactly, the kinds
           present are exactly those the formulas make non-zero, group sizes are T and D
           (training, with --checkpoint-activations one more all-reduce per block whose
           forward has one; --inference files: the forward collectives alone; with
           --sequence-parallel, grid "sp=1", docs/tensor1d.md's all-gathers and reduce-scatters)
       check_tensor1d.py memory FILE...   (same model, increasing T, D = 1)
           each rank's peak memory holds at least its parameters, gradients and Adam moments
           (4 x local parameters x bytes), and peak memory falls as 1/T (within 10%)
Re-derives everything from the file's config and grid, independently of the C++ code.
Prints one line; exit status 1 on a mismatch.
"""
import json
import sys

import h5py

from result_checks import comm_groups, ffn_width, group_size_problems, verdict

CLASSES = 10


def read(path):
    with h5py.File(path, "r") as f:
        config = json.loads(f.attrs["config_json"])
        grid = dict(item.split("=") for item in f.attrs["grid"].split(","))
        comm = comm_groups(f)
        peak = f["memory/peak_bytes"][()]
        config["mode"] = f.attrs["mode"]
        config["sequence-parallel"] = grid.get("sp") == "1"
    return config, int(grid["tp"]), int(grid["dp"]), comm, peak


def shape(config):
    h, layers, s2 = config["hidden"], config["layers"], config["image-size"] ** 2
    f = ffn_width(config)
    b = 8 if config["precision"] == "fp64" else 4
    return h, layers, s2, f, b, config["block"] == "plain"


def local_parameters(config, tp):
    """Elements one tensor-parallel rank holds."""
    h, layers, s2, f, _, plain = shape(config)
    split = tp > 1
    n = (s2 * h // tp + h) if split and s2 % tp == 0 else s2 * h + h  # embed: row split
    if plain:
        pairs = layers // 2 if split else 0
        n += pairs * ((h * h // tp + h // tp) + (h * h // tp + h))  # column block, row block
        n += (layers - 2 * pairs) * (h * h + h)  # replicated
    else:
        n += layers * (2 * h + (h * f // tp + f // tp) + (f * h // tp + h))  # LN, fc1 col, fc2 row
    n += (CLASSES * h // tp + CLASSES // tp) if split and CLASSES % tp == 0 else CLASSES * h + CLASSES
    return n


def sequence_parallel_bytes(config, rows, embed_row, classifier_column):
    """--sequence-parallel (fp64: every wire 8 bytes): each activation all-reduce becomes an
    all-gather and a reduce-scatter; gradients of parameters applied to local rows are summed."""
    h, layers, s2, _, b, _ = shape(config)
    a = rows * h * b
    if config["mode"] == "inference":
        return {"allgather:tp": a * (layers + 1) + rows * CLASSES * b * classifier_column,
                "reduce_scatter:tp": a * (layers + embed_row)}
    k = 1 if config.get("checkpoint-activations") else 0
    gradients = 2 * h * layers + (0 if embed_row else s2 * h + h)
    return {"allgather:tp": a * ((2 + k) * layers + 1 + embed_row) +
            rows * CLASSES * b * classifier_column,
            "reduce_scatter:tp": a * ((2 + k) * layers + embed_row + classifier_column),
            "allreduce:tp": gradients * b}


def expected_bytes(config, tp, dp, rows):
    h, layers, s2, _, b, plain = shape(config)
    split = tp > 1
    embed_row = split and s2 % tp == 0
    classifier_column = split and CLASSES % tp == 0
    pairs = (layers // 2 if plain else layers) if split else 0
    inference = config["mode"] == "inference"
    out = {}
    if inference:  # forward: the embed's and each pair's row-parallel output
        all_reduces = embed_row + pairs
    else:  # + backward: each pair's and the classifier's column-parallel dX; + the recompute
        recompute = pairs if config.get("checkpoint-activations") else 0
        all_reduces = embed_row + 2 * pairs + classifier_column + recompute
    if config.get("sequence-parallel"):
        out = sequence_parallel_bytes(config, rows, embed_row, classifier_column)
    elif all_reduces:
        out["allreduce:tp"] = rows * h * b * all_reduces
    if classifier_column and not config.get("sequence-parallel"):
        out["allgather:tp"] = rows * CLASSES * b
    if dp > 1 and not inference:
        out["allreduce:data"] = local_parameters(config, tp) * b
    return out


def check_volumes(path):
    config, tp, dp, comm, _ = read(path)
    batch = config["batch"]
    problems = []
    kinds = set()
    for rank in range(tp * dp):
        d = rank // tp  # tp innermost
        rows = batch * (d + 1) // dp - batch * d // dp
        expected = expected_bytes(config, tp, dp, rows)
        kinds |= set(expected)
        for kind, value in expected.items():
            if kind in comm and not (comm[kind][0][:, rank] == value).all():
                problems.append(f"{kind} rank {rank}: {sorted(set(comm[kind][0][:, rank]))} != {value}")
    if set(comm) != kinds:
        problems.append(f"kinds {sorted(comm)} != {sorted(kinds)}")
    problems += group_size_problems(comm, tp, dp)
    return verdict(path, problems, lambda: f"volumes equal the formulas on all {tp * dp} ranks (" +
                   (", ".join(f"{k} {int(v[0][0, 0])} B" for k, v in sorted(comm.items())) or "none") + ")")


def check_memory(paths):
    runs = sorted((read(p) + (p,) for p in paths), key=lambda run: run[1])
    base_config, base_tp = runs[0][0], runs[0][1]
    base_peak = max(runs[0][4])
    problems, summary = [], []
    for config, tp, dp, _, peak, path in runs:
        _, _, _, _, b, _ = shape(config)
        state = 4 * local_parameters(config, tp) * b
        if dp != 1 or {k: v for k, v in config.items() if k not in ("tp", "out")} != \
                {k: v for k, v in base_config.items() if k not in ("tp", "out")}:
            problems.append(f"{path}: not the same model at D = 1")
        if min(peak) < state:
            problems.append(f"T={tp}: peak {min(peak)} B below parameters + gradients + Adam {state} B")
        ratio = max(peak) * tp / (base_peak * base_tp)
        if ratio > 1.10:
            problems.append(f"T={tp}: peak {max(peak)} B is {ratio:.3f} x the 1/T share")
        summary.append(f"T={tp} {max(peak)} B")
    peaks = [max(run[4]) for run in runs]
    if any(later >= earlier for earlier, later in zip(peaks, peaks[1:])):
        problems.append(f"peak memory does not fall with T: {peaks}")
    if problems:
        print("; ".join(problems))
        return 1
    print("peak memory per rank falls as 1/T: " + ", ".join(summary))
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "volumes":
        return check_volumes(sys.argv[2])
    if len(sys.argv) >= 4 and sys.argv[1] == "memory":
        return check_memory(sys.argv[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
