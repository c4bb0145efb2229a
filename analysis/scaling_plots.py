"""Strong and weak scaling figures: step time, throughput and parallel efficiency against ranks.

One figure per (strong|weak, model, batch); one line per series (scheme, grid shape family and
variant; see run_groups). Step time is the median over measured iterations of the slowest
rank; repeated runs at one rank count are combined by their median. The dashed ideal starts at
each series' smallest rank count: strong scaling keeps step x ranks constant, weak scaling keeps
the step constant. Parallel efficiency = throughput / (throughput at the first point x ranks /
first ranks), which is t1*r1/(t*r) for strong and t1/t for weak scaling.
"""
import numpy as np

from plot_style import colour, log_axis, plt, save, slug, unique_name
from run_groups import config_title, model_key, per_rank_batch, scaling_series
from run_stats import summarise


def _points(series, stats):
    """(ranks, nodes, median step s, samples/s) per rank count of a series."""
    rows = []
    for ranks in series.rank_counts:
        runs = [r for r in series.runs if r.ranks == ranks]
        step = float(np.median([stats[r.path].median_step_s for r in runs]))
        samples = float(np.median([stats[r.path].samples_per_s for r in runs]))
        rows.append((ranks, max(r.nodes for r in runs), step, samples))
    return rows


def _rank_ticks(axis, points_by_series):
    ranks = sorted({p[0] for pts in points_by_series for p in pts})
    nodes = {}
    for pts in points_by_series:
        for r, n, _, _ in pts:
            nodes.setdefault(r, set()).add(n)
    multi_node = any(max(v) > 1 for v in nodes.values())

    def text(r):
        if not multi_node:
            return str(r)
        ns = sorted(nodes[r])
        span = str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
        return f"{r}\n({span} node{'s' if ns[-1] > 1 else ''})"

    axis.set_xscale("log", base=2)
    axis.set_xticks(ranks)
    axis.set_xticklabels([text(r) for r in ranks])
    axis.minorticks_off()
    axis.set_xlabel("MPI ranks (nodes)" if multi_node else "MPI ranks (all on one node)")


def _figure(mode, series_list, serial_runs, stats, sample_run, batch):
    fig, (ax_t, ax_x, ax_e) = plt.subplots(1, 3, figsize=(15, 4.8))
    all_points = []
    for i, series in enumerate(series_list):
        pts = _points(series, stats)
        all_points.append(pts)
        r = np.array([p[0] for p in pts], dtype=float)
        t = np.array([p[2] for p in pts]) * 1e3
        x = np.array([p[3] for p in pts])
        c = colour(i)
        ax_t.plot(r, t, "o-", color=c, label=series.label)
        ax_t.plot(r, t[0] * r[0] / r if mode == "strong" else np.full_like(r, t[0]), "--", color=c, alpha=0.6)
        ax_x.plot(r, x, "o-", color=c, label=series.label)
        ax_x.plot(r, x[0] * r / r[0], "--", color=c, alpha=0.6)
        ax_e.plot(r, 100 * x / (x[0] * r / r[0]), "o-", color=c, label=series.label)
    for run in serial_runs:
        s = stats[run.path]
        kw = dict(marker="*", color="black", markersize=12, linestyle="none")
        ax_t.plot([1], [s.median_step_s * 1e3], label="serial (reference)", **kw)
        ax_x.plot([1], [s.samples_per_s], label="serial (reference)", **kw)
    ax_e.axhline(100, color="grey", linestyle="--", linewidth=1)
    for ax in (ax_t, ax_x, ax_e):
        _rank_ticks(ax, all_points)
    log_axis(ax_t)
    log_axis(ax_x)
    ax_t.set_ylabel("step time, median of slowest rank (ms)")
    ax_x.set_ylabel("throughput (samples/s)")
    ax_e.set_ylabel("parallel efficiency (%)")
    top = max([100.0] + [100 * p[3] / (pts[0][3] * p[0] / pts[0][0]) for pts in all_points for p in pts])
    ax_e.set_ylim(0, top * 1.1)
    ax_t.set_title("step time (dashed: ideal)")
    ax_x.set_title("throughput (dashed: ideal)")
    ax_e.set_title("parallel efficiency vs the first point")
    ax_t.plot([], [], "--", color="grey", label="ideal (from each line's first point)")
    handles, labels = ax_t.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    fig.legend(unique.values(), unique.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5))
    what = (f"global batch {batch} fixed" if mode == "strong" else f"per-rank batch {batch} fixed")
    fig.suptitle(f"{mode.capitalize()} scaling: {config_title(sample_run, what)}")
    fig.tight_layout()
    return fig


def render(runs, out_dir, stats):
    """Writes every scaling figure; returns [(title, file name)]."""
    written, used = [], set()
    for (mode, model, batch), series_list in sorted(scaling_series(runs).items(), key=lambda kv: repr(kv[0])):
        sample = series_list[0].runs[-1]
        serial = [r for r in runs if r.scheme == "serial" and model_key(r) == model and
                  (r.global_batch == batch if mode == "strong" else per_rank_batch(r) == batch)]
        fig = _figure(mode, series_list, serial, stats, sample, batch)
        c = sample.config
        name = slug(f"scaling-{mode}-h{c.get('hidden')}-l{c.get('layers')}-s{c.get('image-size')}"
                    f"-b{batch}-{sample.precision}-{sample.device}")
        name = unique_name(name, used)
        title = f"{mode.capitalize()} scaling, {'global' if mode == 'strong' else 'per-rank'} batch {batch}"
        written.append((title, save(fig, out_dir, name)))
    return written


def stats_for(runs):
    return {r.path: summarise(r) for r in runs}
