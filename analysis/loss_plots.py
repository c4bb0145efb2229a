"""Training loss of runs that train the same model overlaid, one figure per model, global batch
and seed (run_groups.loss_groups). Every scheme computes what serial training computes, so their
curves should coincide; the lower panel shows how far each run is from a reference run (a serial
run if there is one, preferring fp64), relative to the reference's loss."""
import numpy as np

from plot_style import colour, plt, save, slug, unique_name
from run_groups import describe_options, distinguishing_options, ffn_text, loss_groups

STYLES = ("-", "--", "-.", ":")
FLOOR = 1e-17  # relative differences of exactly 0 are drawn here on the log axis


def _reference(runs):
    ranked = sorted(runs, key=lambda r: (r.scheme != "serial", r.precision != "fp64", r.ranks, r.name))
    return ranked[0]


def _labels(runs):
    precisions = {r.precision for r in runs}
    devices = {r.device for r in runs}
    labels = []
    for run, options in zip(runs, distinguishing_options(runs)):
        grid = "" if run.grid == "1" else f" {run.grid}"
        extra = [describe_options(options)]
        extra += [run.precision] if len(precisions) > 1 else []
        extra += [run.device] if len(devices) > 1 else []
        extra = " ".join(e for e in extra if e)
        labels.append(f"{run.scheme}{grid}, {run.ranks} rank{'s' if run.ranks > 1 else ''}"
                      f"{' ' + extra if extra else ''} ({run.name})")
    return labels


def _title(run):
    c = run.config
    return (f"Training loss: H={c.get('hidden')}, L={c.get('layers')}, {ffn_text(c)}, "
            f"{c.get('image-size')}x{c.get('image-size')} images, global batch {run.global_batch}, "
            f"{c.get('optimizer')} lr={c.get('lr')}, seed {c.get('seed')}, data {c.get('data')}")


def _figure(runs):
    compare = len(runs) > 1
    fig, axes = plt.subplots(2 if compare else 1, 1, sharex=True, squeeze=False,
                             figsize=(11, 7 if compare else 4.5), layout="constrained")
    ax_loss = axes[0][0]
    reference = _reference(runs)
    for i, (run, label) in enumerate(zip(runs, _labels(runs))):
        steps = np.arange(1, len(run.loss) + 1)
        style = dict(color=colour(i), linestyle=STYLES[i % len(STYLES)], linewidth=1.4)
        ax_loss.plot(steps, run.loss, label=label, **style)
        if compare and run is not reference:
            n = min(len(run.loss), len(reference.loss))
            diff = np.abs(run.loss[:n] - reference.loss[:n]) / np.maximum(np.abs(reference.loss[:n]), 1e-300)
            axes[1][0].plot(steps[:n], np.maximum(diff, FLOOR), **style)
    ax_loss.set_ylabel("training loss (cross-entropy)")
    ax_loss.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    fig.suptitle(_title(reference))
    if compare:
        ax_diff = axes[1][0]
        ax_diff.set_yscale("log")
        ax_diff.set_ylabel(f"|loss - reference| / reference\n({FLOOR:g} = identical)")
        ax_diff.set_title(f"difference from the reference run: {reference.name}")
    axes[-1][0].set_xlabel("iteration (warm-up included)")
    return fig


def render(runs, out_dir):
    """Writes the loss figures; returns [(title, file name)]."""
    written, used = [], set()
    def order(group):
        c = group[0].config
        return tuple(int(c.get(k) or 0) for k in ("hidden", "layers", "image-size")) + (
            group[0].global_batch, group[0].name)

    for members in sorted(loss_groups(runs).values(), key=order):
        members.sort(key=lambda r: (r.scheme != "serial", r.scheme, r.ranks, r.grid, r.name))
        c = members[0].config
        name = unique_name(slug(f"loss-h{c.get('hidden')}-l{c.get('layers')}-s{c.get('image-size')}"
                                f"-b{members[0].global_batch}-seed{c.get('seed')}"), used)
        title = _title(members[0]).replace("Training loss: ", f"Training loss of {len(members)} run{'s' if len(members) > 1 else ''}, ")
        written.append((title, save(_figure(members), out_dir, name)))
    return written
