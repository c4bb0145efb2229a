"""Shared matplotlib setup: the Agg backend (no display needed), colours, byte-size ticks, saving."""
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter  # noqa: E402

plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
                     "font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8})

COLOURS = plt.get_cmap("tab10").colors


def colour(i):
    return COLOURS[i % len(COLOURS)]


def human_bytes(value, _pos=None):
    """8 B, 4 KiB, 1 MiB, ... for byte-size tick labels."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:g} {unit}"
        value /= 1024
    return str(value)


BYTES_FORMATTER = FuncFormatter(human_bytes)


def slug(text):
    """A file-name-safe form of `text`."""
    return re.sub(r"[^A-Za-z0-9.=+-]+", "-", str(text)).strip("-") or "x"


def save(fig, folder, name):
    """Writes `fig` as folder/name.png, closes it and returns the file name."""
    fig.savefig(os.path.join(folder, f"{name}.png"), bbox_inches="tight")
    plt.close(fig)
    return f"{name}.png"


def log_axis(axis, which="y"):
    """Logarithmic axis with plain-number tick labels: at 1, 2, 5 x 10^k over up to three
    decades (readable over a small range), at powers of ten beyond. Call after plotting."""
    import math
    from matplotlib.ticker import LogLocator, NullFormatter
    getattr(axis, f"set_{which}scale")("log")
    low, high = getattr(axis, f"get_{which}lim")()
    decades = math.log10(high / low) if low > 0 and high > low else 1.0
    target = axis.yaxis if which == "y" else axis.xaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,)))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def unique_name(name, used):
    """`name`, or name-2, name-3, ... if already in `used` (which records the answer)."""
    candidate, k = name, 2
    while candidate in used:
        candidate, k = f"{name}-{k}", k + 1
    used.add(candidate)
    return candidate
