"""Writes a small MNIST-layout IDX directory (28x28 images) from a fixed seed.

usage: make_idx.py DIR TRAIN TEST [--bands]
Pixels are uniform in [0, 256); with --bands uniform in [0, 64) plus a bright band of rows per
class (rows 2y+4 to 2y+7 for label y), so that a model can learn the data.
"""
import os
import sys

import numpy as np


def main():
    args = [a for a in sys.argv[1:] if a != "--bands"]
    bands = "--bands" in sys.argv[1:]
    if len(args) != 3:
        print(__doc__)
        return 2
    d, train, test = args[0], int(args[1]), int(args[2])
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    for prefix, count in (("train", train), ("t10k", test)):
        labels = rng.integers(0, 10, size=count, dtype=np.uint8)
        images = rng.integers(0, 64 if bands else 256, size=(count, 28, 28), dtype=np.uint8)
        if bands:
            for s, y in enumerate(labels):
                images[s, 2 * y + 4 : 2 * y + 8, :] = 255
        with open(f"{d}/{prefix}-images-idx3-ubyte", "wb") as f:
            f.write(np.array([0x803, count, 28, 28], dtype=">u4").tobytes() + images.tobytes())
        with open(f"{d}/{prefix}-labels-idx1-ubyte", "wb") as f:
            f.write(np.array([0x801, count], dtype=">u4").tobytes() + labels.tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
