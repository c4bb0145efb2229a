"""Which runs belong together: same model, same scheme and grid shape family, scaling series.

Grid shape family. A run's `grid` attribute is the scheme's flags, e.g. `dp=4,zero=3` or
`pp=2,dp=4,schedule=1f1b`. The process-grid dimensions (DIMENSION_KEYS: dp, pp, tp, tp-dims)
change with the rank count; everything else (zero=3, schedule=...) names the family. A dimension
value equal to the world size is written `N` (dp=N, tp-dims=N,1,1); when no dimension equals the
world size, `dp` is written `N/k` with k = ranks/dp (pp=2,dp=N/2 is "two stages, data parallel
over the rest"); other dimension values are kept. One-rank runs fit every family of their
scheme: they are the one-rank point of each.

Strong or weak. Runs of one family, model and variant at two or more rank counts form a strong
scaling series when they share the global batch, and a weak scaling series when they share the
per-rank batch (global batch / ranks) and the global batch grows with the ranks. A one-rank run
may start both kinds of series.
"""
import re
from fractions import Fraction

DIMENSION_KEYS = ("dp", "pp", "tp", "tp-dims", "tp_dims")
# Options that define the model and its training: runs differing in one are never compared.
MODEL_KEYS = ("hidden", "layers", "ffn-mult", "ffn-hidden", "image-size", "block", "optimizer",
              "lr", "data")
# Options that change neither the model nor the timing of a step.
BOOKKEEPING_KEYS = ("out", "print-every", "eval-samples", "verify", "config", "iters", "epochs",
                    "warmup", "seed", "batch", "device", "precision")


def parse_grid(grid):
    """[(key, value)] of a grid string; comma-separated parts without '=' extend the last value."""
    entries = []
    for part in str(grid).split(","):
        if "=" in part or not entries:
            key, _, value = part.partition("=")
            entries.append([key.strip(), value.strip()])
        else:
            entries[-1][1] += "," + part.strip()
    return [tuple(e) for e in entries]


def _numbers(value):
    return [int(x) for x in re.split(r"[,x×]", value)] if re.fullmatch(r"\d+([,x×]\d+)*", value) else None


def grid_family(run):
    """(non-dimension entries, dimension pattern) of a run's grid; pattern None for one rank."""
    entries = parse_grid(run.grid)
    fixed = tuple((k, v) for k, v in entries if k not in DIMENSION_KEYS or _numbers(v) is None)
    dims = [(k, _numbers(v)) for k, v in entries if k in DIMENSION_KEYS and _numbers(v) is not None]
    if run.ranks == 1:
        return fixed, None
    n = run.ranks
    if any(x == n for _, values in dims for x in values):
        pattern = tuple((k, ",".join("N" if x == n else str(x) for x in values)) for k, values in dims)
    else:
        pattern = tuple((k, (f"N/{n // values[0]}" if k == "dp" and len(values) == 1 and values[0]
                             and n % values[0] == 0 else ",".join(map(str, values))))
                        for k, values in dims)
    return fixed, pattern


def family_label(scheme, fixed, pattern):
    entries = list(pattern or ()) + list(fixed)
    grid = ",".join(f"{k}={v}" if v else k for k, v in entries)
    return f"{scheme} {grid}" if grid and grid != "1" else scheme


def model_key(run):
    """What must match for two runs to train the same model the same way (batch aside)."""
    c = run.config
    return (run.device, run.precision) + tuple((k, c.get(k)) for k in MODEL_KEYS)


def variant(run):
    """Options outside the model, the grid and bookkeeping (e.g. no-overlap, bucket-mb, comm)."""
    grid_keys = {k for k, _ in parse_grid(run.grid)}
    skip = set(MODEL_KEYS) | set(BOOKKEEPING_KEYS) | set(DIMENSION_KEYS) | grid_keys
    return tuple(sorted((k, v) for k, v in run.config.items() if k not in skip))


def describe_options(options):
    """Short text for variant entries: flags by name, others as key=value."""
    words = []
    for key, value in options:
        if value is True:
            words.append(key)
        elif value not in (False, None, ""):
            words.append(f"{key}={value}")
    return " ".join(words)


def distinguishing_options(runs):
    """Per run, the variant entries whose values differ among the `runs` that have them (so a
    data-parallel option is not shown merely because a serial run lacks it)."""
    variants = [dict(variant(r)) for r in runs]
    keys = sorted({k for v in variants for k in v})
    varying = [k for k in keys if len({repr(v[k]) for v in variants if k in v}) > 1]
    return [tuple((k, v[k]) for k in varying if k in v) for v in variants]


def ffn_text(config):
    """F as the run set it: --ffn-hidden itself, else --ffn-mult times H."""
    width = config.get("ffn-hidden") or 0
    return f"F={width}" if width else f"F={config.get('ffn-mult')}H"


def config_title(run, batch_text=None):
    """One line naming the trained configuration."""
    c = run.config
    batch = batch_text or f"global batch {run.global_batch}"
    return (f"H={c.get('hidden')}, L={c.get('layers')}, {ffn_text(c)}, "
            f"{c.get('image-size')}x{c.get('image-size')} images, {batch}, "
            f"{c.get('optimizer')} lr={c.get('lr')}, {run.precision}, {run.device}")


def per_rank_batch(run):
    return Fraction(run.global_batch, run.ranks)


class Series:
    """Runs of one family at several rank counts; `mode` is 'strong' or 'weak'."""

    def __init__(self, mode, label, runs):
        self.mode, self.label = mode, label
        self.runs = sorted(runs, key=lambda r: (r.ranks, r.path))

    @property
    def rank_counts(self):
        return sorted({r.ranks for r in self.runs})


def scaling_series(runs):
    """{(mode, model key, batch): [Series]} for every series with two or more rank counts."""
    families = {}
    singles = []
    for run in runs:
        fixed, pattern = grid_family(run)
        base = (model_key(run), run.scheme, fixed, variant(run))
        if pattern is None:
            singles.append((base, run))
        else:
            families.setdefault(base + (pattern,), []).append(run)
    for base, run in singles:
        matching = [key for key in families if key[:4] == base]
        if matching:
            for key in matching:
                families[key].append(run)
        else:  # e.g. dp=1 alone: its own family, joined by no other run
            families.setdefault(base + (None,), []).append(run)

    figures = {}
    for key, members in families.items():
        model, scheme, fixed, _, pattern = key
        label = family_label(scheme, fixed, pattern)
        for mode, batch_of in (("strong", lambda r: r.global_batch), ("weak", per_rank_batch)):
            by_batch = {}
            for run in members:
                by_batch.setdefault(batch_of(run), []).append(run)
            for batch, chosen in by_batch.items():
                if len({r.ranks for r in chosen}) < 2:
                    continue
                if mode == "weak" and len({r.global_batch for r in chosen}) < 2:
                    continue
                figures.setdefault((mode, model, batch), []).append(Series(mode, label, chosen))
    for series_list in figures.values():  # name variants only where they differ in one figure
        extras = distinguishing_options([s.runs[-1] for s in series_list])
        for series, extra in zip(series_list, extras):
            text = describe_options(extra)
            series.label += f" {text}" if text else ""
        series_list.sort(key=lambda s: s.label)
    return figures


def loss_groups(runs):
    """{key: [runs]} of runs that train the same model from the same seed and global batch: their
    loss curves should coincide, whatever the scheme, device or precision."""
    groups = {}
    for run in runs:
        key = model_key(run)[2:] + (run.global_batch, run.config.get("seed"))
        groups.setdefault(key, []).append(run)
    return groups
