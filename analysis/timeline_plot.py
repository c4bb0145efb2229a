"""Draws the timeline of a --trace file: one row per rank, its phases above and its communication
below, coloured by kind; idle time (a pipeline's bubbles) is the empty space.

usage: .venv/bin/python analysis/timeline_plot.py TRACE.json OUT.png [--steps N]

Communication is drawn as a thin line from the call's posting to its completion and as full
bars for the parts the rank spent blocked in it: starting it (started_us, MPI) and waiting.
--steps N shows the last N steps (default 2; 0: the whole run). Exit status: 0, 1 when the file is not a trace-event JSON file
or an event lacks what the drawing reads (one line naming the file and the event), 2 for a bad
command line.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from plot_style import plt, save  # noqa: E402  (after the path is set)

PHASE_COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "recompute": "tab:brown",
                 "optimizer": "tab:green", "data": "tab:gray", "evaluation": "lightgray"}
COMM_COLOURS = {"send": "tab:purple", "recv": "tab:pink", "allreduce": "tab:red",
                "allgather": "tab:olive", "reduce_scatter": "tab:cyan", "broadcast": "gold"}
PHASE_ROW = (0.05, 0.5)   # y offset and height inside a rank's row (the row is 1 high)
COMM_ROW = (0.58, 0.32)
IN_FLIGHT = 0.06          # the height of a call's in-flight line at the bottom of its band


class TraceError(Exception):
    """A file that cannot be drawn; str() is 'FILE: what is wrong'. `is_trace` is False when the
    file is no trace at all (not JSON, or no traceEvents list), which make_plots passes over."""

    def __init__(self, path, problem, is_trace=True):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem, self.is_trace = path, problem, is_trace


def _number(value, minimum=None):
    """Whether value is a finite JSON number (not a boolean), at least minimum when given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        value = float(value)
    except OverflowError:  # an integer beyond a float's range
        return False
    return math.isfinite(value) and (minimum is None or value >= minimum)


def _shown(value):
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _slice_problem(e):
    """What in complete (ph X) event e would break the drawing, or None."""
    if not isinstance(e.get("name"), str):
        return "has no name string"
    if "pid" not in e:
        return "has no pid"
    if isinstance(e["pid"], bool) or not isinstance(e["pid"], int):
        return f"pid {_shown(e['pid'])} is not an integer rank"
    for key, minimum in (("ts", None), ("dur", 0)):
        if not _number(e.get(key), minimum):
            what = "a finite number of µs" + (" >= 0" if minimum is not None else "")
            return (f"{key} {_shown(e[key])} is not {what}" if key in e
                    else f"has no {key}")
    if not math.isfinite(float(e["ts"]) + float(e["dur"])):
        return "ts + dur is not finite"
    args = e.get("args", {})
    if not isinstance(args, dict):
        return "args is not an object"
    if e["name"] == "step" and (isinstance(args.get("iteration"), bool)
                                or not isinstance(args.get("iteration"), int)):
        return "step has no integer args.iteration"
    for key in ("started_us", "blocked_us"):
        if key in args and not _number(args[key], 0):
            return f"args.{key} {_shown(args[key])} is not a finite number of µs >= 0"
    return None


def load_trace(path):
    """(complete events, other data) of a trace-event JSON file, every field the drawing reads
    checked, so one bad file is one TraceError naming the file and the event, never a traceback."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except RecursionError:
        raise TraceError(path, "JSON nested too deeply to be a trace", is_trace=False) from None
    except (OSError, ValueError) as e:
        raise TraceError(path, f"not a JSON file ({e})", is_trace=False) from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise TraceError(path, "no traceEvents list", is_trace=False)
    other = doc.get("otherData", {})
    if not isinstance(other, dict):
        raise TraceError(path, "otherData is not an object")
    slices = []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise TraceError(path, f"traceEvents[{i}] is not an object")
        if e.get("ph") != "X":  # metadata and other kinds are not drawn
            continue
        problem = _slice_problem(e)
        if problem:
            raise TraceError(path, f"traceEvents[{i}] (ph X): {problem}")
        slices.append(dict(e, ts=float(e["ts"]), dur=float(e["dur"])))  # no int overflow later
    if not slices:
        raise TraceError(path, "no complete (ph X) events")
    if not math.isfinite(max(e["ts"] + e["dur"] for e in slices) - min(e["ts"] for e in slices)):
        raise TraceError(path, "the events span an infinite time")
    return slices, other


def window(slices, steps):
    """(start, end) in µs of the last `steps` steps over every rank (0: everything)."""
    step_slices = [e for e in slices if e["name"] == "step"]
    if steps > 0 and step_slices:
        last = max(e["args"]["iteration"] for e in step_slices)
        shown = [e for e in step_slices if e["args"]["iteration"] > last - steps]
    else:
        shown = slices
    return (min(e["ts"] for e in shown), max(e["ts"] + e["dur"] for e in shown))


def draw(events, other, steps, title=None):
    """The figure of a trace's events, as load_trace returns and checks them."""
    slices = [e for e in events if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in slices})
    row_of = {rank: i for i, rank in enumerate(ranks)}
    start, end = window(slices, steps)
    to_ms = lambda us: (us - start) / 1e3  # noqa: E731
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(ranks) + 1.6))
    used = {}
    for e in slices:
        if e["ts"] + e["dur"] < start or e["ts"] > end:
            continue
        y = row_of[e["pid"]]
        x, width = to_ms(e["ts"]), e["dur"] / 1e3
        if e.get("cat") == "comm":
            colour = COMM_COLOURS.get(e["name"], "black")
            offset, height = COMM_ROW
            ax.broken_barh([(x, width)], (y + offset + height - IN_FLIGHT, IN_FLIGHT),
                           facecolors=colour, alpha=0.5)
            # Blocked in the call that started it (MPI), then in its wait, at the end.
            args = e.get("args", {})
            started = min(args.get("started_us", 0) / 1e3, width)
            waited = min(args.get("blocked_us", 0) / 1e3 - started, width - started)
            for at, length in ((x, started), (x + width - waited, waited)):
                if length > 0:
                    ax.broken_barh([(at, length)], (y + offset, height), facecolors=colour)
        elif e["name"] == "step":  # a tick where each step begins
            ax.plot([x, x], [y, y + 1], color="black", linewidth=0.6)
            continue
        else:
            colour = PHASE_COLOURS.get(e["name"], "black")
            offset, height = PHASE_ROW
            ax.broken_barh([(x, width)], (y + offset, height), facecolors=colour,
                           edgecolor="white", linewidth=0.3)
        used[e["name"]] = colour
    ax.set_xlim(0, (end - start) / 1e3)
    ax.set_ylim(len(ranks), 0)  # rank 0 on top
    ax.set_yticks([i + 0.5 for i in range(len(ranks))], [f"rank {r}" for r in ranks])
    ax.set_xlabel("time (ms)")
    ax.grid(axis="y", visible=False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in used.values()]
    handles.append(plt.Line2D([0], [0], color="black", linewidth=0.6))
    labels = list(used) + ["step begins"]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    shown = f"last {steps} step{'s' if steps != 1 else ''}" if steps > 0 else "whole run"
    ax.set_title(title or f"{other.get('scheme', '?')} {other.get('grid', '')}: timeline, "
                 f"{shown} (phases above; communication below: a line in flight, a bar blocked)")
    return fig


def render(path, out_png, steps=2):
    """Writes the timeline of trace `path` to out_png; raises TraceError."""
    events, other = load_trace(path)
    fig = draw(events, other, steps)
    folder, name = os.path.split(out_png)
    save(fig, folder or ".", os.path.splitext(name)[0])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a --trace file")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--steps", type=int, default=2, help="show the last N steps (0: all)")
    args = parser.parse_args(argv)
    try:
        render(args.trace, args.out, args.steps)
    except TraceError as e:
        print(e, file=sys.stderr)
        return 1
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
