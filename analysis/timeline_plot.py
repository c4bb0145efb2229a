"""Draws the timeline of a --trace file: one row per rank, its phases above and its communication
below, coloured by kind; idle time (a pipeline's bubbles) is the empty space.

usage: .venv/bin/python analysis/timeline_plot.py TRACE.json OUT.png [--steps N]

Communication is drawn as a thin line from the call's posting to its completion and as full
bars for the parts the rank spent blocked in it: starting it (started_us, MPI) and waiting.
--steps N shows the last N steps (default 2; 0: the whole run). Exit status: 0, 1 when the file is not a trace-event JSON file,
2 for a bad command line.
"""
import argparse
import json
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
    pass


def load_trace(path):
    """(events, other data) of a trace-event JSON file; raises TraceError naming the problem."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise TraceError(f"{path}: not a JSON file ({e})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise TraceError(f"{path}: no traceEvents list")
    return events, doc.get("otherData", {})


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
    """The figure of a trace's events."""
    slices = [e for e in events if e.get("ph") == "X"]
    if not slices:
        raise TraceError("no complete (ph X) events")
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
