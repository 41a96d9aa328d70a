"""Statistics of a row's repeated runs: median, inter-quartile range, lower quartile and
trimmed mean, of fine-clock times or of the profiler's whole microseconds.

Which of them a fit uses is :mod:`calibration.statistic`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibration.statistic import HALF_COLUMNS, TRIM, statistic_column

#: The ORT profiler's time step: it truncates each kernel's ``dur`` to whole
#: microseconds (``duration_cast<microseconds>`` in ``TimeDiffMicroSeconds``).
PROFILE_QUANTUM_S = 1e-6


def binned_time_stats(values, quantum_s: float = PROFILE_QUANTUM_S) -> dict[str, float]:
    """:func:`time_stats` of durations the clock truncated to whole ``quantum_s`` (ORT's
    profiler: whole microseconds), as grouped data.

    A reading ``d`` stands for a duration in ``[d, d + quantum_s)``; each quartile is
    interpolated inside its bin, as if the bin's readings were spread evenly over it
    (the textbook median of grouped data). The plain quartiles of truncated readings are
    low by up to one quantum and move in whole steps: a 3.9 µs Reshape read as 3 µs in
    every run has the plain median 3 µs (−23 %), this median 3.5 µs; two kernels of
    3.4 and 3.6 µs are both "3 µs" to the plain median, so anything fitted to such
    readings is noisy by ±0.5 µs, ±17 % of a 3 µs kernel.

    Raises
    ------
    ValueError
        When ``values`` is empty or ``quantum_s`` is not positive.
    """
    if quantum_s <= 0:
        raise ValueError(f"quantum_s must be positive, got {quantum_s}")
    steps = np.rint(np.asarray(values, float) / quantum_s).astype(np.int64)
    if steps.size == 0:
        raise ValueError("no readings")
    bins, counts = np.unique(steps, return_counts=True)
    below_end = np.cumsum(counts)

    def quantile(fraction: float) -> float:
        target = fraction * steps.size
        i = int(np.searchsorted(below_end, target, side="left"))
        below = below_end[i] - counts[i]
        return float((bins[i] + (target - below) / counts[i]) * quantum_s)

    q1, med, q3 = quantile(0.25), quantile(0.5), quantile(0.75)
    # a reading d stands for [d, d + quantum): on average d + quantum / 2
    mean = trimmed_mean(steps * quantum_s) + quantum_s / 2
    return {"median_s": med, "iqr_s": q3 - q1, "q1_s": q1, "mean_s": mean}


def time_stats(values) -> dict[str, float]:
    """The table's time columns of repeated runs: ``median_s``, ``iqr_s``, ``q1_s`` (the
    lower quartile: other processes only ever add time to a run) and ``mean_s``
    (:func:`trimmed_mean`)."""
    q1, med, q3 = np.percentile(np.asarray(values, float), [25, 50, 75])
    return {
        "median_s": float(med),
        "iqr_s": float(q3 - q1),
        "q1_s": float(q1),
        "mean_s": trimmed_mean(values),
    }


def trimmed_mean(values, trim: float = TRIM) -> float:
    """The mean of ``values`` without the ``floor(trim x n)`` lowest and highest.

    On a host whose core runs at one of two speeds from one millisecond to the next
    (another guest on its sibling hyperthread: docs/calibration.md, "A core that
    flips"), a short kernel's runs fall in one mode or the other and its median jumps
    from one mode to the other as the share of slow time crosses one half; the mean
    moves with that share smoothly, and kernels' means add up to their model's mean.
    The cut ends drop the runs a preemption stretched.

    Raises
    ------
    ValueError
        When ``values`` is empty or ``trim`` is not in [0, 0.5).
    """
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim}")
    ordered = np.sort(np.asarray(values, float))
    if ordered.size == 0:
        raise ValueError("no readings")
    cut = int(np.floor(trim * ordered.size))
    return float(ordered[cut : ordered.size - cut].mean())


#: Fewest runs a half needs for :func:`half_stats` to give its statistics.
HALF_MIN_RUNS = 4


def half_stats(values, stats: Callable[..., dict[str, float]] = time_stats) -> dict[str, float]:
    """Each statistic of :data:`~calibration.statistic.STATISTICS` over the first and
    over the second half of ``values`` (runs in the order they were timed: the earlier
    rounds, then the later), by ``stats`` (:func:`time_stats`, or
    :func:`binned_time_stats` for the profiler's readings); NaN when a half has fewer
    than :data:`HALF_MIN_RUNS` runs.

    How far a statistic's two halves agree over many rows tells how well it repeats on
    this host within one run (docs/calibration.md, "A core that flips").
    """
    values = list(values)
    middle = len(values) // 2
    out = {}
    for index, half in enumerate((values[:middle], values[middle:])):
        got = stats(half) if len(half) >= HALF_MIN_RUNS else None
        for statistic, columns in HALF_COLUMNS.items():
            out[columns[index]] = got[statistic_column(statistic)] if got else float("nan")
    return out
