"""Per-run step breakdown: where the step goes, compute versus communication, collectives.

Three panels share one bar per run (ms per step, median over measured iterations of the mean
over ranks):
  1. the phase timers: forward, backward, optimizer, data, and `other` (step minus the phases).
     Phase times include the time a rank waits for communication inside that phase;
  2. compute versus communication: exposed communication (/timing/exposed_comm, the time ranks
     were blocked waiting for collectives), pipeline bubble (/timing/bubble, when a scheme
     records it), data, and compute = the rest of the step;
  3. each collective's start-to-completion time per iteration (/comm/<name>/time), stacked, with
     the bytes moved per iteration. Asynchronous collectives overlap compute and each other, so
     this total can exceed the step; only what panel 2 calls exposed slowed the step down.
Runs that train the same model share a figure (at most RUNS_PER_FIGURE).
"""
import numpy as np

from plot_style import plt, save, slug, unique_name
from run_groups import config_title, describe_options, distinguishing_options, model_key
from run_stats import breakdown

RUNS_PER_FIGURE = 12
PHASE_COLOURS = {"forward": "#4C72B0", "backward": "#DD8452", "optimizer": "#55A868",
                 "data": "#8C8C8C", "other": "#D9D9D9"}
SPLIT_COLOURS = {"compute": "#4C72B0", "exposed comm": "#C44E52", "bubble": "#8172B3", "data": "#8C8C8C"}
KIND_CMAP = plt.get_cmap("Set2")


def _stack(axis, y, parts, colours, labels_seen):
    left = 0.0
    for name, ms in parts:
        if not np.isfinite(ms) or ms <= 0:
            continue
        label = name if name not in labels_seen else None
        labels_seen.add(name)
        axis.barh(y, ms, left=left, color=colours[name], edgecolor="white", linewidth=0.5,
                  height=0.7, label=label)
        left += ms
    return left


def _run_label(run, options, show_batch):
    extra = describe_options(options)
    grid = "" if run.grid == "1" else f" {run.grid}"
    batch = f", batch {run.global_batch}" if show_batch else ""
    return (f"{run.name}\n{run.scheme}{grid}{' ' + extra if extra else ''}, "
            f"{run.ranks} rank{'s' if run.ranks > 1 else ''}{batch}")


def _figure(runs, title):
    parts = [breakdown(r) for r in runs]
    kinds = sorted({k for b in parts for k in b.comm_time})
    kind_colours = {k: KIND_CMAP(i % 8) for i, k in enumerate(kinds)}
    fig, (ax_p, ax_s, ax_c) = plt.subplots(1, 3, sharey=True, figsize=(15, 2.2 + 0.55 * len(runs)),
                                           layout="constrained")
    seen = {ax_p: set(), ax_s: set(), ax_c: set()}  # legend entries, once per panel
    for y, (run, b) in enumerate(zip(runs, parts)):
        _stack(ax_p, y, [(p, b.phases[p] * 1e3) for p in ("forward", "backward", "optimizer", "data")]
               + [("other", b.other * 1e3)], PHASE_COLOURS, seen[ax_p])
        _stack(ax_s, y, [("compute", b.compute * 1e3), ("exposed comm", b.exposed_comm * 1e3),
                         ("bubble", b.bubble * 1e3), ("data", b.phases["data"] * 1e3)], SPLIT_COLOURS,
               seen[ax_s])
        if not np.isfinite(b.exposed_comm):
            ax_s.text(b.step * 1e3, y, "  exposed comm not recorded", va="center", fontsize=7)
        total = _stack(ax_c, y, [(k, b.comm_time[k] * 1e3) for k in b.comm_time], kind_colours, seen[ax_c])
        if b.comm_time:
            moved = sum(float(np.median(t.bytes[run.warmup:].max(axis=1))) for t in run.comm.values())
            ax_c.text(max(total, b.step * 1e3), y, f"  {moved / 1e6:.3g} MB/iter", va="center", fontsize=7)
        else:
            ax_c.text(b.step * 1e3, y, "  no collectives", va="center", fontsize=7)
        for ax in (ax_p, ax_s, ax_c):
            ax.plot([b.step * 1e3], [y], marker="|", color="black", markersize=14, linestyle="none",
                    label="step (mean over ranks)" if (ax is ax_p and y == 0) else None)
    show_batch = len({r.global_batch for r in runs}) > 1
    labels = [_run_label(r, o, show_batch) for r, o in zip(runs, distinguishing_options(runs))]
    ax_p.set_yticks(range(len(runs)))
    ax_p.set_yticklabels(labels, fontsize=7)
    ax_p.invert_yaxis()
    titles = {ax_p: "phase timers (waits included)", ax_s: "compute vs communication",
              ax_c: "collectives, start to completion (may overlap)"}
    for ax, panel_title in titles.items():
        ax.set_xlabel("time per step (ms)")
        ax.grid(axis="y", visible=False)
        ax.set_axisbelow(True)
        ax.set_xlim(left=0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(title=panel_title, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                      fontsize=7, title_fontsize=9, frameon=False)
        else:
            ax.set_title(panel_title)
    ax_c.set_xlim(right=ax_c.get_xlim()[1] * 1.25)  # room for the MB/iter labels
    fig.suptitle(f"Step breakdown: {title}")
    return fig


def render(runs, out_dir):
    """Writes the breakdown figures; returns [(title, file name)]."""
    groups = {}
    for run in runs:
        groups.setdefault(model_key(run), []).append(run)
    written, used = [], set()
    for _key, members in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        members.sort(key=lambda r: (r.scheme != "serial", r.scheme, r.ranks, r.grid, r.path))
        count = -(-len(members) // RUNS_PER_FIGURE)
        size = -(-len(members) // count)  # balanced parts of at most RUNS_PER_FIGURE runs
        chunks = [members[i:i + size] for i in range(0, len(members), size)]
        batches = sorted({r.global_batch for r in members})
        batch = str(batches[0]) if len(batches) == 1 else f"{batches[0]}-{batches[-1]}"
        c = members[0].config
        base = slug(f"breakdown-h{c.get('hidden')}-l{c.get('layers')}-s{c.get('image-size')}"
                    f"-b{batch}-{members[0].precision}-{members[0].device}")
        for part, chunk in enumerate(chunks, 1):
            name = unique_name(base + (f"-part{part}" if len(chunks) > 1 else ""), used)
            title = config_title(chunk[0], f"global batch {batch}")
            suffix = f" (part {part} of {len(chunks)})" if len(chunks) > 1 else ""
            figure = _figure(chunk, title + suffix)
            written.append((f"Step breakdown, {title}{suffix}", save(figure, out_dir, name)))
    return written
