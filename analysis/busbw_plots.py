"""Bus bandwidth against message size, one figure per bin/bench_comm file, one line per
collective. busbw is nccl-tests' (algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather and
reduce-scatter, x 1 for broadcast and send/recv), so lines of different collectives compare
against the same link bandwidth. Sizes are nccl-tests' message sizes (results/README.md)."""
import numpy as np

from plot_style import BYTES_FORMATTER, colour, log_axis, plt, save, slug, unique_name

MARKERS = "osD^vP*Xh"


def _figure(bench):
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (op, columns) in enumerate(sorted(bench.ops.items())):
        size, busbw = columns["bytes"], columns["busbw"]
        keep = (size > 0) & (busbw > 0)
        wrong = columns.get("wrong")
        bad = int(np.sum(wrong[wrong > 0])) if wrong is not None else 0
        label = op + (f" ({bad} WRONG elements)" if bad else "")
        ax.plot(size[keep], busbw[keep], marker=MARKERS[i % len(MARKERS)], markersize=4,
                color=colour(i), label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(BYTES_FORMATTER)
    log_axis(ax)
    for tick in ax.get_xticklabels():
        tick.set_rotation(45)
    ax.set_xlabel("message size (nccl-tests bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.legend(title="collective")
    a = bench.attrs
    hosts = [h for h in str(a.get("hosts", "")).split(",") if h]
    nodes = max(1, len(hosts))
    checked = {-1: "results not checked", 0: "all results correct"}.get(int(a.get("wrong", -1)),
                                                                       f"{a.get('wrong')} WRONG elements")
    ax.set_title(f"Bus bandwidth: {a['backend']} collectives on {a['device']}, {bench.ranks} ranks on "
                 f"{nodes} node{'s' if nodes > 1 else ''}, {a['datatype']}\n{bench.name} ({checked})")
    fig.tight_layout()
    return fig


def render(benches, out_dir):
    """Writes one figure per bench_comm file; returns [(title, file name)]."""
    written, used = [], set()
    for bench in sorted(benches, key=lambda b: b.name):
        name = slug(f"busbw-{bench.name.removesuffix('.h5')}")
        name = unique_name(name, used)
        title = f"Bus bandwidth, {bench.attrs['backend']} on {bench.ranks} ranks ({bench.name})"
        written.append((title, save(_figure(bench), out_dir, name)))
    return written
