"""Checks that two result files recorded the same communication: the same communicators and
kinds (/comm keys), group sizes, and bytes in every iteration on every rank.

usage: check_same_comm.py FILE FILE
Prints one line; exit status 1 on a difference.
"""
import sys

import h5py
import numpy as np

from result_checks import comm_groups, verdict


def main():
    first, second = sys.argv[1], sys.argv[2]
    with h5py.File(first, "r") as f:
        a = comm_groups(f)
    with h5py.File(second, "r") as f:
        b = comm_groups(f)
    problems = []
    if set(a) != set(b):
        problems.append(f"kinds {sorted(a)} != {sorted(b)}")
    else:
        for key in sorted(a):
            (bytes_a, size_a), (bytes_b, size_b) = a[key], b[key]
            if size_a != size_b:
                problems.append(f"{key} group size {size_a} != {size_b}")
            if bytes_a.shape != bytes_b.shape or not np.array_equal(bytes_a, bytes_b):
                problems.append(f"{key} bytes {np.unique(bytes_a)} != {np.unique(bytes_b)}")
    return verdict(f"{first} vs {second}", problems, lambda: "same communication (" + ", ".join(
        f"{k} {int(a[k][0].ravel()[0])} B over {a[k][1]}" for k in sorted(a)) + " ranks)")


if __name__ == "__main__":
    sys.exit(main())
