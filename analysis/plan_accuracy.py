"""How well the planner predicted the runs: each result file's /prediction against its measurement.

usage: .venv/bin/python analysis/plan_accuracy.py RESULTS_DIR [...] [--out DIR] [--json FILE]

Every *.h5 under each folder (recursively; a path may also be one file) that carries a
/prediction group (written by a run given a machine description, --machine) gives one row:
predicted and measured step time, peak memory, exposed communication and, for a pipeline, bubble
fraction. Files without /prediction are skipped and named in one line. Then one closing line per
set of runs (a configuration run more than once, as a sweep's "repeat" does, counts once, at
its runs' median), "oversubscribed: runs N, ..." for runs whose ranks time-shared cores
(/prediction oversubscribed = 1) and, last, "runs N, median error X%, max error Y%, kendall tau T,
best slowdown S%, memory max error M%" for the dedicated ones (analysis/README.md defines them).
--out DIR also draws the figures (analysis/plan_plots.py), --json FILE writes the figures and the
rows. A file that is not a complete result, or whose /prediction lacks a field, is one line on
stderr naming the file and the field; the exit status is then 1 (also when no file has a
prediction), 2 for a path that does not exist.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h5py  # noqa: E402
from result_files import (CommBench, ResultFileError, find_result_files, load_result,  # noqa: E402
                          open_result_file)
from run_stats import measured, median_of_slowest  # noqa: E402

# /prediction attributes: the ones every row needs, and the ones read when present.
REQUIRED_FLOATS = ("step_seconds", "peak_bytes")
OPTIONAL_FLOATS = ("compute_seconds", "optimizer_seconds", "comm_seconds", "exposed_comm_seconds",
                   "bubble_fraction", "samples_per_second")
STRINGS = ("machine", "machine_file")
# config_json keys that fix the model's shape: runs are ranked against each other only when these,
# the world size, the global batch, the device and the mode agree.
SHAPE_KEYS = ("hidden", "layers", "ffn-mult", "ffn-hidden", "image-size", "block")
SETS = (("oversubscribed", "oversubscribed: "), ("dedicated", ""))


def read_prediction(path):
    """The /prediction attributes of `path` as a dict, or None when it has none; raises
    ResultFileError naming the file and the attribute when one is missing or malformed."""
    with open_result_file(path) as f:
        try:
            if "prediction" not in f:
                return None
            group = f["prediction"]
            if not isinstance(group, h5py.Group):
                raise ResultFileError(path, "/prediction is not a group")
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in group.attrs.items()}
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ResultFileError(path, f"unreadable /prediction "
                                        f"({type(e).__name__}: {e})") from None
    prediction = {}
    for name in REQUIRED_FLOATS + ("oversubscribed",):
        if name not in attrs:
            raise ResultFileError(path, f"missing attribute /prediction {name}")
    for name in REQUIRED_FLOATS + OPTIONAL_FLOATS:
        if name not in attrs:
            continue
        try:
            if isinstance(attrs[name], str):
                raise TypeError
            value = float(np.asarray(attrs[name]).item())
        except (TypeError, ValueError):
            raise ResultFileError(path, f"attribute /prediction {name} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ResultFileError(path, f"attribute /prediction {name} is {value}, expected a "
                                        f"finite number >= 0")
        prediction[name] = value
    if prediction["step_seconds"] <= 0:
        raise ResultFileError(path, "attribute /prediction step_seconds is 0, expected a time > 0")
    raw = np.asarray(attrs["oversubscribed"])
    oversubscribed = raw.item() if raw.size == 1 else None
    if isinstance(oversubscribed, bool) or oversubscribed not in (0, 1):
        raise ResultFileError(path, f"attribute /prediction oversubscribed is {oversubscribed!r}, "
                                    f"expected 0 or 1")
    oversubscribed = int(oversubscribed)
    prediction["oversubscribed"] = oversubscribed
    for name in STRINGS:
        prediction[name] = str(attrs.get(name, ""))
    return prediction


def measured_bubble_fraction(run):
    """Per rank the median over measured iterations of bubble / (step - data), then the mean over
    ranks; NaN without /timing/bubble."""
    if "bubble" not in run.timing:
        return float("nan")
    w = run.warmup
    busy = measured(run.timing["step"], w) - measured(run.timing["data"], w)
    bubble = measured(run.timing["bubble"], w)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(busy > 0, bubble / np.where(busy > 0, busy, 1.0), np.nan)
    if fraction.size == 0 or np.all(np.isnan(fraction)):
        return float("nan")
    per_rank = [np.median(c[~np.isnan(c)]) for c in fraction.T if np.any(~np.isnan(c))]
    return float(np.mean(per_rank))


def _finite_or_none(value):
    return float(value) if value is not None and math.isfinite(value) else None


def _relative(predicted, actual):
    return (predicted - actual) / actual if actual and math.isfinite(actual) else None


def configuration_key(run, prediction):
    """Runs of one command on as many ranks, predicted alike: repeats of one configuration."""
    options = {k: v for k, v in run.config.items() if k not in ("out", "trace")}
    return json.dumps([run.ranks, options, prediction["step_seconds"]], sort_keys=True,
                      default=str)


def accuracy_row(run, prediction):
    """One run's predicted and measured figures (a JSON-ready dict; None where unknown)."""
    w = run.warmup
    step = median_of_slowest(run.timing["step"], w)
    if not math.isfinite(step):
        raise ResultFileError(run.path, "/timing/step has no measured iteration "
                                        "(warmup_iterations = iterations)")
    if step <= 0:
        raise ResultFileError(run.path, "/timing/step: the median step is 0 s, no error can be "
                                        "computed")
    exposed = (median_of_slowest(run.timing["exposed_comm"], w) if "exposed_comm" in run.timing
               else float("nan"))
    peak = float(np.max(run.peak_bytes)) if run.peak_bytes.size else float("nan")
    pipeline = "bubble" in run.timing  # a pipeline records its idle time
    p = prediction
    return {
        "file": run.name, "scheme": run.scheme, "grid": run.grid, "world_size": run.ranks,
        "device": run.device, "precision": run.precision, "mode": run.mode,
        "global_batch": run.global_batch,
        "model": {k: run.config.get(k) for k in SHAPE_KEYS},
        "machine": p["machine"], "machine_file": p["machine_file"],
        "oversubscribed": p["oversubscribed"],
        "predicted_step_seconds": p["step_seconds"], "measured_step_seconds": step,
        "step_error": _relative(p["step_seconds"], step),
        "predicted_peak_bytes": p["peak_bytes"], "measured_peak_bytes": _finite_or_none(peak),
        "memory_error": _relative(p["peak_bytes"], peak),
        "predicted_exposed_comm_seconds": p.get("exposed_comm_seconds"),
        "measured_exposed_comm_seconds": _finite_or_none(exposed),
        "pipeline": pipeline,
        "predicted_bubble_fraction": p.get("bubble_fraction") if pipeline else None,
        "measured_bubble_fraction": _finite_or_none(measured_bubble_fraction(run)),
        "predicted_samples_per_second": p.get("samples_per_second"),
        "measured_samples_per_second": run.global_batch / step,
        "predicted": {k: p[k] for k in REQUIRED_FLOATS + OPTIONAL_FLOATS if k in p},
        "configuration": configuration_key(run, p), "repeats": 1,
    }


def combine_repeats(rows):
    """One row per configuration (a sweep's "repeat" runs each several times): its runs'
    measured step, exposed communication and bubble as their median, the largest peak, the
    errors recomputed from them; a configuration run once keeps its row."""
    groups = {}
    for r in rows:
        groups.setdefault(r["configuration"], []).append(r)
    combined = []
    for members in groups.values():
        r = dict(members[0])
        if len(members) > 1:
            def median(key):
                values = [m[key] for m in members if m[key] is not None]
                return float(np.median(values)) if values else None
            for key in ("measured_step_seconds", "measured_exposed_comm_seconds",
                        "measured_bubble_fraction"):
                r[key] = median(key)
            peaks = [m["measured_peak_bytes"] for m in members if m["measured_peak_bytes"]]
            r["measured_peak_bytes"] = max(peaks) if peaks else None
            r["step_error"] = _relative(r["predicted_step_seconds"], r["measured_step_seconds"])
            r["memory_error"] = _relative(r["predicted_peak_bytes"], r["measured_peak_bytes"])
            r["measured_samples_per_second"] = r["global_batch"] / r["measured_step_seconds"]
            r["repeats"] = len(members)
            r["file"] = f"{members[0]['file']} (median of {len(members)})"
        combined.append(r)
    return combined


def problem_key(row):
    """Runs of one problem, whose step times the planner ranks against each other."""
    return (row["world_size"], row["global_batch"], row["device"], row["mode"],
            tuple(json.dumps(row["model"][k], sort_keys=True) for k in SHAPE_KEYS))


def kendall_counts(x, y):
    """(concordant, discordant) pairs of two equally long sequences; ties count as neither."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(len(x), k=1)
    signs = np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])
    return int(np.sum(signs > 0)), int(np.sum(signs < 0))


def kendall_tau(x, y):
    """Kendall's tau-a over untied pairs: (concordant - discordant) / (concordant + discordant);
    NaN when there is no such pair."""
    c, d = kendall_counts(x, y)
    return (c - d) / (c + d) if c + d else float("nan")


def set_figures(rows):
    """The closing line's figures for one set of rows (fractions, not %; NaN for n/a)."""
    errors = np.abs([r["step_error"] for r in rows])
    groups = {}
    for r in rows:
        groups.setdefault(problem_key(r), []).append(r)
    concordant = discordant = 0
    slowdowns = []
    for members in groups.values():
        if len(members) < 2:
            continue
        predicted = [r["predicted_step_seconds"] for r in members]
        actual = [r["measured_step_seconds"] for r in members]
        c, d = kendall_counts(predicted, actual)
        concordant, discordant = concordant + c, discordant + d
        slowdowns.append(actual[int(np.argmin(predicted))] / min(actual) - 1.0)
    memory = [abs(r["memory_error"]) for r in rows if r["memory_error"] is not None]
    pairs = concordant + discordant
    return {
        "runs": len(rows),
        "median_error": float(np.median(errors)) if rows else float("nan"),
        "max_error": float(np.max(errors)) if rows else float("nan"),
        "kendall_tau": (concordant - discordant) / pairs if pairs else float("nan"),
        "comparable_pairs": pairs, "groups_of_two_or_more": len(slowdowns),
        "best_slowdown": max(slowdowns) if slowdowns else float("nan"),
        "memory_max_error": max(memory) if memory else float("nan"),
    }


def _percent(value):
    return f"{value * 100:.1f}%" if math.isfinite(value) else "n/a"


def closing_line(figures, prefix=""):
    tau = figures["kendall_tau"]
    return (f"{prefix}runs {figures['runs']}, median error {_percent(figures['median_error'])}, "
            f"max error {_percent(figures['max_error'])}, kendall tau "
            f"{f'{tau:.2f}' if math.isfinite(tau) else 'n/a'}, best slowdown "
            f"{_percent(figures['best_slowdown'])}, memory max error "
            f"{_percent(figures['memory_max_error'])}")


def split_sets(rows):
    """[(set name, line prefix, rows)] for the sets that have runs, the dedicated set last."""
    out = []
    for name, prefix in SETS:
        members = [r for r in rows if r["oversubscribed"] == (1 if name == "oversubscribed" else 0)]
        if members:
            out.append((name, prefix, members))
    return out


def rows_for(runs, report):
    """Rows of the runs whose files carry /prediction; a malformed /prediction is passed to
    report(ResultFileError) and that run left out. (For make_plots.)"""
    rows = []
    for run in runs:
        try:
            prediction = read_prediction(run.path)
            if prediction is not None:
                rows.append(accuracy_row(run, prediction))
        except ResultFileError as e:
            report(e)
    return combine_repeats(rows)


def _ms(seconds):
    return f"{seconds * 1e3:.4g}" if seconds is not None else "–"


def _mb(value):
    return f"{value / 1e6:.4g}" if value is not None else "–"


def _signed(fraction):
    return f"{fraction * 100:+.1f}" if fraction is not None else "–"


def _fraction(value):
    return f"{value:.3f}" if value is not None else "–"


def table(rows):
    """The per-run table as text lines, columns padded to their widths."""
    header = ["file", "scheme", "grid", "ranks", "precision", "set", "step pred ms", "meas ms",
              "err %", "peak pred MB", "meas MB", "err %", "exposed pred/meas ms",
              "bubble pred/meas"]
    lines = [header]
    for r in rows:
        bubble = (f"{_fraction(r['predicted_bubble_fraction'])}/"
                  f"{_fraction(r['measured_bubble_fraction'])}" if r["pipeline"] else "–")
        exposed = (f"{_ms(r['predicted_exposed_comm_seconds'])}/"
                   f"{_ms(r['measured_exposed_comm_seconds'])}")
        lines.append([r["file"], r["scheme"], r["grid"], str(r["world_size"]), r["precision"],
                      "oversub" if r["oversubscribed"] else "dedicated",
                      _ms(r["predicted_step_seconds"]), _ms(r["measured_step_seconds"]),
                      _signed(r["step_error"]), _mb(r["predicted_peak_bytes"]),
                      _mb(r["measured_peak_bytes"]), _signed(r["memory_error"]), exposed, bubble])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text_columns = {0, 1, 2, 4, 5}
    return ["  ".join(cell.ljust(w) if i in text_columns else cell.rjust(w)
                      for i, (cell, w) in enumerate(zip(line, widths))).rstrip() for line in lines]


def _json_ready(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def collect(paths):
    """[(file, name shown)] of every *.h5 under the paths; SystemExit(2) for a missing path."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            found += [(f, os.path.relpath(f, path)) for f in find_result_files(path)]
        elif os.path.exists(path):
            found.append((path, path))
        else:
            print(f"{path}: no such file or folder", file=sys.stderr)
            raise SystemExit(2)
    return found


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="RESULTS_DIR",
                        help="result folders (searched recursively) or files")
    parser.add_argument("--out", help="folder for the figures (plan-*.png)")
    parser.add_argument("--json", help="write the figures and the per-run rows to this JSON file")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    status, rows, without = 0, [], []
    for path, name in collect(args.paths):
        try:
            prediction = read_prediction(path)
            if prediction is None:
                without.append(name)
                continue
            run = load_result(path)
            if isinstance(run, CommBench):
                raise ResultFileError(path, "a bin/bench_comm file with /prediction")
            run.name = name
            rows.append(accuracy_row(run, prediction))
        except ResultFileError as e:
            print(e, file=sys.stderr)
            status = 1
    if without:
        print(f"skipped {len(without)} file{'s' if len(without) != 1 else ''} without a "
              f"prediction: {', '.join(without)}")
    if not rows:
        if status == 0:  # else the files' own lines have said why
            print(f"{', '.join(args.paths)}: no result file with a /prediction", file=sys.stderr)
        return 1
    files = len(rows)
    rows = combine_repeats(rows)
    if len(rows) < files:
        print(f"{files} files of {len(rows)} configurations: a configuration run more than once "
              "is one row, its runs' median")
    machines = sorted({(r["machine"], r["machine_file"]) for r in rows})
    print("predictions for machine " + "; ".join(f"{m or '?'} ({f or '?'})" for m, f in machines))
    print("\n".join(table(rows)))
    sets = [(name, prefix, members, set_figures(members))
            for name, prefix, members in split_sets(rows)]
    if args.out:
        import plan_plots  # matplotlib only when figures are asked for
        os.makedirs(args.out, exist_ok=True)
        written = plan_plots.render(rows, args.out)
        print("figures: " + ", ".join(os.path.join(args.out, png) for _, png in written))
    if args.json:
        document = {"sets": {name: dict(figures, line=closing_line(figures, prefix))
                             for name, prefix, _, figures in sets},
                    "runs": rows, "skipped_without_prediction": without}
        with open(args.json, "w") as f:
            json.dump(_json_ready(document), f, indent=1)
            f.write("\n")
        print(f"json: {args.json}")
    for _, prefix, _, figures in sets:
        print(closing_line(figures, prefix))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
