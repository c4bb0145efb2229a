"""Scaling across node counts: for each series of runs (one scheme, grid family, model, global
batch and ranks per node) at two or more node counts, each carrying the planner's /prediction,
the measured step and the prediction side by side at every node count, each split into
exposed communication inside a node, exposed communication between nodes, and the rest.

A collective is inter-node when the run's own prediction placed its group on the inter-node link
(/prediction inter_node:<collective>, from the ranks' real host map), so the measured and the
predicted bars split the same collectives the same way. A bar's height is the step (measured:
the median of the slowest rank; predicted: step_seconds); its communication is the exposed part
(measured: /timing/exposed_comm, the median over iterations of the mean over ranks; predicted:
exposed_comm_seconds), shared between the links in proportion to each collective's time
(/comm/<collective>/time; comm_seconds:<collective>).
"""
import numpy as np

from plot_style import plt, save, slug, unique_name
from result_files import ResultFileError, open_result_file
from run_groups import config_title, family_label, grid_family, model_key, variant
from run_stats import median_of_rank_mean, median_of_slowest

PARTS = (("rest of the step", "lightgrey"), ("exposed comm inside a node", "tab:blue"),
         ("exposed comm between nodes", "tab:orange"))


def _prediction(path):
    """The /prediction attributes of `path` (numbers), or None when it has none."""
    with open_result_file(path) as f:
        if "prediction" not in f:
            return None
        return {k: v for k, v in f["prediction"].attrs.items() if not isinstance(v, (str, bytes))}


def _split(step, exposed, seconds_by_collective, inter_node):
    """(rest, intra, inter) seconds of a step: the exposed (blocked) communication, shared
    between the links in proportion to each collective's start-to-completion time (calls in
    flight at once overlap, so those times may add up to more than the step). A collective the
    prediction did not place counts as intra-node (it ran on no link the planner priced)."""
    inter = sum(s for k, s in seconds_by_collective.items() if inter_node.get(k))
    total = sum(seconds_by_collective.values())
    exposed = min(exposed, step)
    inter = exposed * inter / total if total > 0 else 0.0
    return step - exposed, exposed - inter, inter


def _parts(run, prediction):
    """(measured parts, predicted parts), each (rest, intra, inter) in seconds."""
    inter_node = {k[len("inter_node:"):]: bool(v) for k, v in prediction.items()
                  if k.startswith("inter_node:")}
    measured = {name: median_of_rank_mean(table.time, run.warmup) for name, table in run.comm.items()}
    predicted = {k[len("comm_seconds:"):]: float(v) for k, v in prediction.items()
                 if k.startswith("comm_seconds:")}
    exposed = (median_of_rank_mean(run.timing["exposed_comm"], run.warmup)
               if "exposed_comm" in run.timing else sum(measured.values()))
    return (_split(median_of_slowest(run.timing["step"], run.warmup), exposed, measured,
                   inter_node),
            _split(float(prediction["step_seconds"]),
                   float(prediction.get("exposed_comm_seconds", sum(predicted.values()))),
                   predicted, inter_node))


def node_series(runs):
    """{series label: [(run, prediction)]} for series at two or more node counts."""
    families = {}
    for run in runs:
        try:
            prediction = _prediction(run.path)
        except (ResultFileError, OSError):
            continue  # plan_accuracy reports malformed predictions
        if not prediction or "step_seconds" not in prediction:
            continue
        fixed, _ = grid_family(run)  # the dimensions grow with the nodes
        key = (model_key(run), run.scheme, fixed, variant(run), run.global_batch,
               run.ranks // run.nodes)
        families.setdefault(key, []).append((run, prediction))
    series = {}
    for key, members in families.items():
        if len({run.nodes for run, _ in members}) < 2:
            continue
        _, scheme, fixed, _, batch, per_node = key
        label = (f"{family_label(scheme, fixed, None)}, global batch {batch}, "
                 f"{per_node} rank{'s' if per_node > 1 else ''} per node")
        series[label] = sorted(members, key=lambda m: (m[0].nodes, m[0].path))
    return series


def steps_by_nodes(members):
    """[(nodes, measured step s, predicted step s)], runs at one node count by their median."""
    rows = []
    for n in sorted({run.nodes for run, _ in members}):
        at = [_parts(run, p) for run, p in members if run.nodes == n]
        rows.append((n, float(np.median([sum(m) for m, _ in at])),
                     float(np.median([sum(p) for _, p in at]))))
    return rows


def _figure(label, members):
    nodes = sorted({run.nodes for run, _ in members})
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    width = 0.38
    for i, n in enumerate(nodes):
        at = [_parts(run, p) for run, p in members if run.nodes == n]
        for side, (offset, hatch) in enumerate(((-width / 2, None), (width / 2, "//"))):
            parts = np.median(np.array([a[side] for a in at]), axis=0) * 1e3
            bottom = 0.0
            for value, (name, colour) in zip(parts, PARTS):
                ax.bar(i + offset, value, width, bottom=bottom, color=colour, hatch=hatch,
                       edgecolor="black", linewidth=0.5,
                       label=name if i == 0 and side == 0 else None)
                bottom += value
            ax.annotate(f"{bottom:.3g}", (i + offset, bottom), ha="center", va="bottom",
                        fontsize=7)
    ax.bar(0, 0, 0, color="white", edgecolor="black", label="left: measured")
    ax.bar(0, 0, 0, color="white", edgecolor="black", hatch="//",
           label="right (hatched): bin/plan's prediction")
    ax.set_xticks(range(len(nodes)))
    per_node = members[0][0].ranks // members[0][0].nodes
    ax.set_xticklabels([f"{n} node{'s' if n > 1 else ''}\n({n * per_node} "
                        f"rank{'s' if n * per_node > 1 else ''})" for n in nodes])
    ax.set_xlabel("nodes")
    ax.set_ylabel("step time (ms)")
    ax.legend(loc="upper left", fontsize=7)
    fig.suptitle(f"Across nodes: {label}\n{config_title(members[-1][0])}")
    fig.tight_layout()
    return fig


def render(runs, out_dir):
    """Writes one figure per series; returns [(title, file name)]."""
    written, used = [], set()
    for label, members in sorted(node_series(runs).items()):
        name = unique_name(slug(f"nodes-{label}"), used)
        written.append((f"Across nodes: {label}", save(_figure(label, members), out_dir, name)))
    return written
