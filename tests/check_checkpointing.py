"""Compares a run without --checkpoint-activations (FULL) with the same run with it (CHECKPOINTED).

usage: check_checkpointing.py same-losses FULL CHECKPOINTED
           /train/loss bitwise equal (and not empty), /timing/recompute zero without
           checkpointing and positive on every rank with it
       check_checkpointing.py lower-peak FULL CHECKPOINTED
           /memory/peak_bytes lower with checkpointing on every rank
Prints one line; exit status 1 on a mismatch.
"""
import sys

import h5py
import numpy as np


def same_losses(full, checkpointed):
    a, b = full["train/loss"][()], checkpointed["train/loss"][()]
    recompute = checkpointed["timing/recompute"][()].sum(axis=0)  # per rank
    problems = []
    if a.size == 0 or not np.array_equal(a, b):
        problems.append(f"losses differ: {a.tolist()} vs {b.tolist()}")
    if np.any(full["timing/recompute"][()] != 0):
        problems.append("recompute time without --checkpoint-activations")
    if not np.all(recompute > 0):
        problems.append("a rank records no recompute time with --checkpoint-activations")
    if problems:
        return problems, ""
    return [], (f"{a.size} losses bitwise equal (last {a[-1]!r}), recompute timed on every rank "
                f"(at most {1e3 * recompute.max():.2f} ms)")


def lower_peak(full, checkpointed):
    a, b = full["memory/peak_bytes"][()], checkpointed["memory/peak_bytes"][()]
    pairs = ", ".join(f"{x} -> {y}" for x, y in zip(a, b))
    if len(a) == 0 or len(a) != len(b) or not all(y < x for x, y in zip(a, b)):
        return [f"peak bytes per rank not lower with checkpointing: {pairs}"], ""
    return [], f"peak bytes per rank {pairs}"


def main():
    checks = {"same-losses": same_losses, "lower-peak": lower_peak}
    if len(sys.argv) != 4 or sys.argv[1] not in checks:
        print(__doc__)
        return 2
    with h5py.File(sys.argv[2], "r") as full, h5py.File(sys.argv[3], "r") as checkpointed:
        problems, summary = checks[sys.argv[1]](full, checkpointed)
    print("; ".join(problems) or summary)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
