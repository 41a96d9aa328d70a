"""Failures of nodes and units: specs, down intervals and what happens to the work (pure).

A failure takes a target down over ``[start_s, end_s)``: a whole node (every unit of it,
and every link that ends at it, which then has an outage: the link outage rule of
:meth:`simulator.network.topology.Link.capacity_steps`, applied to these intervals) or
one unit (``node.unit``). The intervals are given (``at_s``, ``for_s``) or drawn from a
seeded stream (``mtbf_s``, ``mttr_s``: exponential up and down times until ``until_s``).

What a request in flight that needs a failed unit does is its app's ``on_failure``:

* ``retry``: it restarts from its input at once on a replica of the app whose units are
  all up (the app's dispatcher chooses among them); when none is, it waits and restarts
  when its own replica is up again;
* ``wait``: it restarts on its own replica when every unit of it is up again;
* ``drop``: it is dropped, and the reason names the unit and the time.

A request arriving while every replica of its app has a unit down waits for its
replica (``retry``, ``wait``) or is dropped (``drop``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from simulator.errors import SocsimError

#: What a request hit by a failure does (see the module's docstring).
ON_FAILURE: tuple[str, ...] = ("retry", "wait", "drop")
#: Spawn-key tag of the failure streams: apart from the apps' and links' streams.
FAILURE_TAG = 0x46A1


@dataclass(frozen=True)
class FailureSpec:
    """A failure schedule of one target.

    Attributes
    ----------
    target : str
        A node name (the whole node) or a unit id ``node.unit``.
    at_s, for_s : float or None
        One failure at ``at_s`` lasting ``for_s`` (s).
    mtbf_s, mttr_s : float or None
        Mean time between failures and to repair (s): exponential up and down times.
    until_s : float or None
        With ``mtbf_s``: no failure starts after this time (s).
    """

    target: str
    at_s: float | None = None
    for_s: float | None = None
    mtbf_s: float | None = None
    mttr_s: float | None = None
    until_s: float | None = None

    def __post_init__(self) -> None:
        explicit = self.at_s is not None and self.for_s is not None
        drawn = self.mtbf_s is not None and self.mttr_s is not None and self.until_s is not None
        if explicit == drawn:
            raise SocsimError(
                f"failure of '{self.target}': give at_s and for_s, or mtbf_s, mttr_s and until_s"
            )
        for label in ("at_s", "until_s"):
            value = getattr(self, label)
            if value is not None and not (0 <= value < math.inf):
                raise SocsimError(f"failure of '{self.target}': {label} must be >= 0, finite")
        for label in ("for_s", "mtbf_s", "mttr_s"):
            value = getattr(self, label)
            if value is not None and not (0 < value < math.inf):
                raise SocsimError(f"failure of '{self.target}': {label} must be > 0, finite")

    def intervals(self, rng: np.random.Generator | None) -> list[tuple[float, float]]:
        """The down intervals ``(start_s, end_s)``, in order; ``rng`` draws the MTBF ones."""
        if self.at_s is not None and self.for_s is not None:
            return [(self.at_s, self.at_s + self.for_s)]
        mtbf_s, mttr_s, until_s = self.mtbf_s, self.mttr_s, self.until_s
        if rng is None or mtbf_s is None or mttr_s is None or until_s is None:
            raise SocsimError(f"failure of '{self.target}': drawn failures need a stream")
        out: list[tuple[float, float]] = []
        t = 0.0
        while True:
            t += float(rng.exponential(mtbf_s))
            if t > until_s:
                return out
            down_s = float(rng.exponential(mttr_s))
            out.append((t, t + down_s))
            t += down_s


def merge(intervals: Iterable[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """Disjoint, sorted union of ``[start, end)`` intervals (touching ones joined)."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return tuple((a, b) for a, b in out)


def down_intervals(
    failures: Sequence[FailureSpec],
    nodes: dict[str, tuple[str, ...]],
    seed: int,
    replicate: int,
) -> tuple[dict[str, tuple[tuple[float, float], ...]], dict[str, tuple[tuple[float, float], ...]]]:
    """Every unit's and every failed node's merged down intervals for one replicate.

    Parameters
    ----------
    failures : sequence of FailureSpec
    nodes : dict of node name -> its unit ids
    seed, replicate : int
        Failure ``k`` with MTBF draws from its own stream of (seed, tag, replicate, k).

    Returns
    -------
    (units, nodes) : dicts of name -> merged intervals
        Only targets that go down appear; a node's intervals also count for its units.
    """
    by_unit: dict[str, list[tuple[float, float]]] = {}
    by_node: dict[str, list[tuple[float, float]]] = {}
    for k, spec in enumerate(failures):
        rng = None
        if spec.mtbf_s is not None:
            rng = np.random.default_rng(
                np.random.SeedSequence(seed, spawn_key=(FAILURE_TAG, replicate, k))
            )
        spans = spec.intervals(rng)
        if spec.target in nodes:
            by_node.setdefault(spec.target, []).extend(spans)
            uids: tuple[str, ...] = nodes[spec.target]
        else:
            uids = (spec.target,)
        for uid in uids:
            by_unit.setdefault(uid, []).extend(spans)
    units = {uid: merge(spans) for uid, spans in by_unit.items() if spans}
    return units, {n: merge(spans) for n, spans in by_node.items() if spans}


def is_down(intervals: Sequence[tuple[float, float]], t: float) -> bool:
    """Whether ``t`` lies in one of the merged ``intervals`` (``start <= t < end``)."""
    k = bisect.bisect_right(intervals, (t, math.inf)) - 1
    return k >= 0 and intervals[k][0] <= t < intervals[k][1]


def down_within(intervals: Sequence[tuple[float, float]], start_s: float, end_s: float) -> float:
    """Seconds of the merged ``intervals`` inside the window ``[start_s, end_s]``."""
    return sum(max(min(b, end_s) - max(a, start_s), 0.0) for a, b in intervals)
