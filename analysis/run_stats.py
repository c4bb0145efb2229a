"""Statistics of one training run, as the executables' closing summary computes them.

Warm-up rows are left out. A step takes as long as its slowest rank, so headline times are the
median over iterations of the slowest rank's value. Breakdown parts are the median over
iterations of the mean over ranks, so that parts of one step add up to (about) its length.
"""
from dataclasses import dataclass

import numpy as np

BREAKDOWN_PHASES = ("forward", "backward", "optimizer", "data")


def measured(table, warmup):
    """Rows of a [iterations x ranks] table after the warm-up."""
    return np.asarray(table)[warmup:]


def median_of_slowest(table, warmup):
    rows = measured(table, warmup)
    return float(np.median(rows.max(axis=1))) if rows.size else float("nan")


def median_of_rank_mean(table, warmup):
    rows = measured(table, warmup)
    return float(np.median(rows.mean(axis=1))) if rows.size else float("nan")


def p95_of_slowest(table, warmup):
    rows = measured(table, warmup)
    return float(np.percentile(rows.max(axis=1), 95, method="inverted_cdf")) if rows.size else float("nan")


@dataclass
class RunSummary:
    median_step_s: float        # slowest rank, median over measured iterations
    p95_step_s: float
    samples_per_s: float
    tflops: float               # model flops per sample x samples/s, NaN if unknown
    exposed_comm_s: float       # slowest rank's blocked time, median; NaN when not recorded
    peak_memory_bytes: int      # largest rank's peak
    comm_bytes: dict            # collective name -> median bytes per iteration (slowest rank)


def flops_per_sample(run):
    """The file's flops_per_sample (training 6 x parameters, + 2 x block parameters with
    activation checkpointing; inference 2 x parameters); files without it trained: 6 x P."""
    if "flops_per_sample" in run.attrs:
        return float(run.attrs["flops_per_sample"])
    return 6.0 * int(run.attrs["parameters"])


def summarise(run):
    w = run.warmup
    step = median_of_slowest(run.timing["step"], w)
    samples = run.global_batch / step if step > 0 else float("nan")
    exposed = (median_of_slowest(run.timing["exposed_comm"], w) if "exposed_comm" in run.timing
               else float("nan"))
    return RunSummary(
        median_step_s=step,
        p95_step_s=p95_of_slowest(run.timing["step"], w),
        samples_per_s=samples,
        tflops=flops_per_sample(run) * samples / 1e12,
        exposed_comm_s=exposed,
        peak_memory_bytes=int(np.max(run.peak_bytes)) if run.peak_bytes.size else 0,
        comm_bytes={name: median_of_slowest(t.bytes, w) for name, t in sorted(run.comm.items())})


@dataclass
class Breakdown:
    """Median rank-mean seconds per part of a step (see the module text)."""
    step: float
    phases: dict                # forward, backward, optimizer, data -> seconds (waits included)
    other: float                # step minus the phases: what no phase timer covered
    exposed_comm: float         # blocked in communication, inside the phases; NaN if unknown
    bubble: float               # /timing/bubble if the scheme records one, else NaN
    compute: float              # step - data - exposed comm - bubble
    comm_time: dict             # collective name -> start-to-completion seconds per iteration


def breakdown(run):
    w = run.warmup
    step = median_of_rank_mean(run.timing["step"], w)
    phases = {p: median_of_rank_mean(run.timing[p], w) for p in BREAKDOWN_PHASES}
    optional = {name: (median_of_rank_mean(run.timing[name], w) if name in run.timing else float("nan"))
                for name in ("exposed_comm", "bubble")}
    known_waits = sum(v for v in optional.values() if np.isfinite(v))
    return Breakdown(
        step=step, phases=phases, other=max(0.0, step - sum(phases.values())),
        exposed_comm=optional["exposed_comm"], bubble=optional["bubble"],
        compute=max(0.0, step - phases["data"] - known_waits),
        comm_time={name: median_of_rank_mean(t.time, w) for name, t in sorted(run.comm.items())})
