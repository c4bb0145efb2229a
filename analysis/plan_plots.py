"""The planner's accuracy (rows of analysis/plan_accuracy.py): predicted against measured step
time, one point per run, and each scheme's median and largest |error|. Oversubscribed runs (ranks
time-sharing cores, which the planner's model does not describe) are hollow markers in the
scatter and separate bars, so that they do not hide how well dedicated runs are predicted."""
import numpy as np

from plot_style import colour, log_axis, plt, save, slug
from matplotlib.colors import to_rgba  # noqa: E402  (after plot_style chose the backend)
from matplotlib.patches import Patch  # noqa: E402

BANDS = ((0.25, 0.08), (0.10, 0.16))  # (relative error, shading alpha), drawn wide to narrow


def _scheme_colours(rows):
    return {s: colour(i) for i, s in enumerate(sorted({r["scheme"] for r in rows}))}


def scatter(rows):
    colours = _scheme_colours(rows)
    fig, ax = plt.subplots(figsize=(6.5, 6))
    measured = np.array([r["measured_step_seconds"] for r in rows]) * 1e3
    predicted = np.array([r["predicted_step_seconds"] for r in rows]) * 1e3
    values = np.concatenate([measured, predicted])
    low, high = values.min() / 1.6, values.max() * 1.6
    line = np.geomspace(low, high, 50)
    for band, alpha in BANDS:
        ax.fill_between(line, line * (1 - band), line * (1 + band), color="tab:green", alpha=alpha,
                        linewidth=0, label=f"±{band * 100:.0f}%")
    ax.plot(line, line, color="black", linewidth=1, label="predicted = measured")
    for scheme, c in colours.items():
        for hollow in (0, 1):
            keep = [i for i, r in enumerate(rows) if r["scheme"] == scheme and
                    r["oversubscribed"] == hollow]
            if not keep:
                continue
            ax.scatter(measured[keep], predicted[keep], s=36, marker="o", linewidths=1.4,
                       edgecolors=c, facecolors="none" if hollow else c,
                       label=scheme + (" (oversubscribed)" if hollow else ""), zorder=3)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    log_axis(ax, "x")
    log_axis(ax, "y")
    ax.set_aspect("equal")
    ax.set_xlabel("measured step (ms, median of the slowest rank)")
    ax.set_ylabel("predicted step (ms, /prediction step_seconds)")
    machines = sorted({r["machine"] or "?" for r in rows})
    ax.set_title(f"Planner's step time against the measurement: {len(rows)} run"
                 f"{'s' if len(rows) != 1 else ''}, machine {', '.join(machines)}\n"
                 f"hollow: oversubscribed (ranks share cores)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def error_bars(rows):
    """Grouped bars per scheme (and per scheme's oversubscribed runs, pale): median |error|
    filled, max |error| hatched."""
    colours = _scheme_colours(rows)
    categories = []
    for scheme in colours:
        for hollow in (0, 1):
            errors = [abs(r["step_error"]) * 100 for r in rows
                      if r["scheme"] == scheme and r["oversubscribed"] == hollow]
            if errors:
                categories.append((scheme + ("\n(oversubscribed)" if hollow else ""), scheme,
                                   hollow, errors))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(categories) + 2), 4.5))
    x = np.arange(len(categories))
    width = 0.38
    for i, (_label, scheme, hollow, errors) in enumerate(categories):
        c = colours[scheme]
        median, largest = float(np.median(errors)), float(np.max(errors))
        ax.bar(x[i] - width / 2, median, width, color=to_rgba(c, 0.35 if hollow else 1.0),
               edgecolor=c, linewidth=1.2)
        ax.bar(x[i] + width / 2, largest, width, color="white", edgecolor=c, hatch="//",
               linewidth=1.2)
        ax.text(x[i], largest, f"n={len(errors)}", ha="center", va="bottom", fontsize=8)
    for level in (10, 25):
        ax.axhline(level, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xticks(x, [label for label, *_ in categories])
    ax.set_ylabel("|predicted − measured| / measured step (%)")
    ax.set_ylim(0, max(30.0, max(max(e) for *_, e in categories) * 1.15))
    ax.legend(handles=[Patch(facecolor="grey", edgecolor="grey", label="median"),
                       Patch(facecolor="white", edgecolor="grey", hatch="//", label="max")],
              loc="upper right")
    ax.set_title("Planner's step-time error per scheme (dashed: 10% and 25%)")
    fig.tight_layout()
    return fig


def render(rows, out_dir):
    """Writes the two figures for plan_accuracy rows (none without rows); returns
    [(title, file name)]."""
    if not rows:
        return []
    rows = sorted(rows, key=lambda r: r["file"])
    return [("Planner accuracy: predicted against measured step time",
             save(scatter(rows), out_dir, slug("plan-step-scatter"))),
            ("Planner accuracy: step-time error per scheme",
             save(error_bars(rows), out_dir, slug("plan-error-by-scheme")))]
