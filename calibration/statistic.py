"""Which statistic of a row's repeated runs stands for its time: names, columns, ``auto``.

Apart from :mod:`calibration.table` so that the command line can offer the choices
without importing pandas.
"""

from __future__ import annotations

from collections.abc import Collection
from types import MappingProxyType

#: Share of the runs the trimmed mean cuts at each end
#: (:func:`calibration.runstats.trimmed_mean`).
TRIM = 0.1

#: Optional column: the lower quartile of the runs' times (s).
Q1 = "q1_s"
#: Optional column: the trimmed mean of the runs' times (s;
#: :func:`calibration.runstats.trimmed_mean`).
MEAN = "mean_s"
#: What a step takes as a row's time: the median of the runs, their lower quartile
#: (``q1_s``; robust to runs that other processes slowed down, which only add time), or
#: their trimmed mean (``mean_s``: the one of the three whose kernels add up to the
#: model's, run by run, on a host whose speed flips between two levels).
STATISTICS = ("median", "q1", "mean")
#: Each statistic in words ("each time is the ... of its runs").
STATISTIC_WORDS = MappingProxyType(
    {
        "median": "median",
        "q1": "lower quartile",
        "mean": f"trimmed mean ({TRIM * 100:.0f} % cut at each end)",
    }
)
#: The column each statistic but the median reads.
STATISTIC_COLUMNS = MappingProxyType({"q1": Q1, "mean": MEAN})
#: What ``--statistic`` accepts: a statistic, or ``auto`` (:func:`resolve_statistic`).
STATISTIC_CHOICES = ("auto", *STATISTICS)
#: Optional columns: each statistic of the first and of the second half of a row's runs
#: (in the order they were timed), for how well it repeats within one run.
HALF_COLUMNS = MappingProxyType({s: (f"{s}_h1_s", f"{s}_h2_s") for s in STATISTICS})


def statistic_column(statistic: str) -> str:
    """The table column holding ``statistic`` (``median_s`` for the median)."""
    return STATISTIC_COLUMNS.get(statistic, "median_s")


#: What ``auto`` means, for help texts.
AUTO_STATISTIC_TEXT = "the trimmed mean at 1 thread, the median above"


def resolve_statistic(statistic: str, threads: int, columns: Collection[str] | None = None) -> str:
    """The statistic a table measured at ``threads`` intra-op threads is fitted with.

    ``columns``: the table's columns, when known. ``auto`` then falls back to the median
    for a table without its statistic's column (one ``import-csv`` wrote, with one time
    per row, or one measured before ``mean_s`` existed); a statistic asked for by name is
    returned as it is (reading the table without its column is an error there).

    ``auto`` (the default) is the trimmed mean at one thread and the median above,
    chosen by how well each statistic's fit-set measurements repeated between two
    consecutive ``calibrate all`` runs on this host (an Intel guest whose cores flip
    between two speeds; docs/calibration.md, "A core that flips"): at one thread 58 %
    of the fit kernels within ±10 % of each other with the mean, 48 % with the median,
    46 % with the lower quartile; at two threads 91 % with the median, 83 % and 79 %.
    (On the AMD guest before it, the median at one thread and the lower quartile above
    had repeated best.)

    Raises
    ------
    ValueError
        On a statistic not in :data:`STATISTIC_CHOICES` or threads < 1.
    """
    if statistic not in STATISTIC_CHOICES:
        raise ValueError(f"statistic must be one of {STATISTIC_CHOICES}, got {statistic!r}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if statistic != "auto":
        return statistic
    chosen = "mean" if threads == 1 else "median"
    if columns is not None and statistic_column(chosen) not in columns:
        return "median"
    return chosen
