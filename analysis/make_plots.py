"""Renders every plot of a results folder into PNG files plus a summary page (index.md).

usage: .venv/bin/python analysis/make_plots.py [PATH ...] [--out DIR] [--strict]

PATH is a folder (searched recursively for *.h5 and *.json; default `results`) or a single file.
Training runs and bin/bench_comm files are told apart by the root attribute `kind`; each --trace
file (JSON with a traceEvents list; other JSON files are passed over) gets a timeline figure
(analysis/timeline_plot.py). When a training file carries the planner's /prediction, the planner
accuracy figures (analysis/plan_plots.py) are drawn too. Files that are not
complete mlpscale results are reported on stderr, one line each ("FILE: missing /timing/step"),
and listed on the page as skipped. Exit status: 0 when at least one file was plotted (1 with
--strict if any was skipped), 1 when none could be, 2 for a bad command line.
"""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import breakdown_plots  # noqa: E402  (after the path is set)
import busbw_plots  # noqa: E402
import loss_plots  # noqa: E402
import node_scaling_plots  # noqa: E402
import plan_accuracy  # noqa: E402
import plan_plots  # noqa: E402
import scaling_plots  # noqa: E402
import summary_page  # noqa: E402
import timeline_plot  # noqa: E402
from plot_style import save, slug, unique_name  # noqa: E402
from result_files import CommBench, ResultFileError, find_result_files, load_result  # noqa: E402

PLOT_PREFIXES = ("scaling-", "nodes-", "breakdown-", "loss-", "busbw-", "timeline-", "plan-")
SCALING_NOTE = ("Runs of one scheme and grid shape family (e.g. `data dp=N,zero=0`) at several rank "
                "counts form a series. A series with a fixed global batch is strong scaling; one with "
                "a fixed per-rank batch (global batch / ranks) and a growing global batch is weak "
                "scaling. Dashed lines are ideal scaling from each series' first point; parallel "
                "efficiency = throughput / (first point's throughput x ranks / first ranks).")
BREAKDOWN_NOTE = ("Median over measured iterations of the mean over ranks. Phase timers include "
                  "the time a phase waited for communication; the middle panel splits the step into "
                  "compute, exposed (blocked) communication, pipeline bubble and data; the right panel "
                  "shows each collective's start-to-completion time, which overlaps compute when the "
                  "scheme overlaps communication.")
TIMELINE_NOTE = ("The last two steps of each --trace file: one row per rank, its phases above and "
                 "its communication below (a thin line while a call is in flight, a full bar while "
                 "the rank is blocked waiting on it); empty space is idle time, such as a "
                 "pipeline's bubbles.")
PLAN_NOTE = ("Runs whose file carries the planner's prediction (/prediction, from --machine): "
             "predicted against measured step time (median of the slowest rank), log-log, with "
             "the predicted = measured line and ±10% / ±25% bands; hollow markers and pale bars "
             "are oversubscribed runs (more ranks on a node than the machine description's ranks "
             "per node). error = (predicted - measured) / measured; "
             "`analysis/plan_accuracy.py` prints the table and the summary figures.")
NODES_NOTE = ("Series of runs at two or more node counts (same scheme, grid family, model, global "
              "batch and ranks per node) whose files carry the planner's prediction: at each node "
              "count the measured step (left) and bin/plan's prediction for the same run (right, "
              "hatched), each split into exposed communication inside a node, exposed "
              "communication between nodes (a collective's link as the run's own prediction "
              "placed its group, from the ranks' real hosts; shared in proportion to each "
              "collective's time) and the rest of the step.")
LOSS_NOTE = ("Runs that train the same model from the same seed with the same global batch; "
             "every scheme should reproduce the serial curve (lower panel: relative difference).")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["results"], help="result folders or files")
    parser.add_argument("--out", help="output folder (default: PATH/plots of the first folder)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any file was skipped")
    return parser.parse_args(argv)


def collect(paths):
    """([(result file, name shown on the page)], [(JSON file, name)]); raises SystemExit(2) for a
    path that does not exist."""
    found, json_files = [], []
    for path in paths:
        if os.path.isdir(path):
            found += [(f, os.path.relpath(f, path)) for f in find_result_files(path)]
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for f in (os.path.join(root, n) for n in sorted(names) if n.endswith(".json")):
                    json_files.append((f, os.path.relpath(f, path)))
        elif os.path.exists(path):
            (json_files if path.endswith(".json") else found).append((path, path))
        else:
            print(f"{path}: no such file or folder", file=sys.stderr)
            raise SystemExit(2)
    return found, json_files


def render_timelines(json_files, out_dir, skipped):
    """A timeline per trace among json_files; returns [(title, file name)]. A broken trace (a
    traceEvents list with a bad event), or a *.trace.json file that is no trace, is reported and
    skipped; other JSON files are passed over."""
    written, used = [], set()
    for path, name in json_files:
        try:
            events, other = timeline_plot.load_trace(path)
            fig = timeline_plot.draw(events, other, steps=2)
        except timeline_plot.TraceError as e:
            if e.is_trace or path.endswith(".trace.json"):
                print(e, file=sys.stderr)
                skipped.append((name, e.problem))
            continue
        stem = name[:-len(".trace.json")] if name.endswith(".trace.json") else name[:-5]
        png = save(fig, out_dir, unique_name(slug(f"timeline-{stem}"), used))
        written.append((f"Timeline of {name}: {other.get('scheme', '?')} {other.get('grid', '')}",
                        png))
    return written


def plan_rows(runs, skipped):
    """plan_accuracy rows of the runs with a /prediction; a malformed /prediction is reported and
    listed as skipped (the run stays in the other figures)."""
    def report(error):
        print(error, file=sys.stderr)
        skipped.append((next((r.name for r in runs if r.path == error.path), error.path),
                        f"{error.problem} (left out of the planner accuracy figures)"))
    return plan_accuracy.rows_for(runs, report)


def plan_note(rows):
    """PLAN_NOTE and plan_accuracy's closing line for each set of runs."""
    lines = [plan_accuracy.closing_line(plan_accuracy.set_figures(members), prefix)
             for _, prefix, members in plan_accuracy.split_sets(rows)]
    return PLAN_NOTE + "".join(f"\n\n`{line}`" for line in lines)


def default_out(paths):
    first = paths[0]
    return os.path.join(first if os.path.isdir(first) else os.path.dirname(first) or ".", "plots")


def main(argv):
    args = parse_args(argv)
    files, json_files = collect(args.paths)
    out_dir = args.out or default_out(args.paths)
    runs, benches, skipped = [], [], []
    for path, name in files:
        try:
            result = load_result(path)
        except ResultFileError as e:
            print(e, file=sys.stderr)
            skipped.append((name, e.problem))
            continue
        result.name = name
        (benches if isinstance(result, CommBench) else runs).append(result)
    if not files and not json_files:
        print(f"{', '.join(args.paths)}: no *.h5 result files", file=sys.stderr)
        return 1

    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "*.png")):  # figures of an earlier call
        if os.path.basename(old).startswith(PLOT_PREFIXES):
            os.remove(old)
    # The figures compare training steps; --inference runs appear in the page's table only.
    training = [r for r in runs if r.mode != "inference"]
    stats = scaling_plots.stats_for(training)
    rows = plan_rows(runs, skipped)
    sections = [
        ("Scaling", scaling_plots.render(training, out_dir, stats), SCALING_NOTE),
        ("Scaling across nodes", node_scaling_plots.render(training, out_dir), NODES_NOTE),
        ("Step breakdown", breakdown_plots.render(training, out_dir), BREAKDOWN_NOTE),
        ("Training loss", loss_plots.render(training, out_dir), LOSS_NOTE),
        ("Planner accuracy", plan_plots.render(rows, out_dir), plan_note(rows)),
        ("Collective bandwidth", busbw_plots.render(benches, out_dir), None),
        ("Timelines", render_timelines(json_files, out_dir, skipped), TIMELINE_NOTE),
    ]
    page = os.path.join(out_dir, "index.md")
    summary_page.write(page, ", ".join(args.paths), runs, benches, skipped, sections)
    figures = sum(len(figs) for _, figs, _ in sections)
    print(f"{page}: {figures} figures, {len(runs)} training runs, {len(benches)} collective "
          f"benchmarks, {len(skipped)} skipped")
    if not runs and not benches and not sections[-1][1]:
        return 1
    return 1 if args.strict and skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
