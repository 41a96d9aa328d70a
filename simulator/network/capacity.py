"""A link direction's capacity as a step function of time (pure).

:class:`StepCapacity` is a fixed list of steps (a constant, a bandwidth trace, zeros
during outages). :class:`RandomCapacity` draws a new value every ``hold_s`` from a
bandwidth distribution, lazily as time advances (the run length is not known in
advance), and is zero wherever its static steps are (outages).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from simulator.errors import SocsimError

if TYPE_CHECKING:
    from simulator.network.impairments import BandwidthDistribution

#: Draws are made this many at a time, always, so the k-th interval's value does not
#: depend on when the channel first asked for it.
CHUNK = 256


class StepCapacity:
    """Capacity (bit/s) from each step's time on; the first step applies from t = 0.

    Parameters
    ----------
    steps : sequence of (time_s, bandwidth_bps)
    """

    __slots__ = ("_bps", "_times")

    def __init__(self, steps: Sequence[tuple[float, float]]):
        self._times = [t for t, _ in steps]
        self._bps = [b for _, b in steps]

    def at(self, t: float) -> float:
        """Capacity (bit/s) at time ``t``."""
        return self._bps[max(bisect.bisect_right(self._times, t) - 1, 0)]

    def next_change_after(self, t: float) -> float:
        """The first step time after ``t`` (inf when none)."""
        k = bisect.bisect_right(self._times, t)
        return self._times[k] if k < len(self._times) else math.inf


class RandomCapacity:
    """Piecewise-constant random capacity: draw ``k`` holds on ``[k·hold, (k+1)·hold)``.

    Parameters
    ----------
    static : StepCapacity
        The direction's steps; where they are 0 (outages) the capacity is 0.
    distribution : BandwidthDistribution
    rng : numpy.random.Generator
        The direction's capacity stream; draw ``k`` is its ``k``-th value.

    Notes
    -----
    Time only moves forward in a run, so only the current chunk of draws is kept;
    asking about an interval before it raises.
    """

    __slots__ = ("_chunk", "_chunk_index", "_floor_bps", "_hold_s", "_rng", "_sampler", "_static")

    def __init__(
        self, static: StepCapacity, distribution: BandwidthDistribution, rng: np.random.Generator
    ):
        self._static = static
        self._hold_s = distribution.hold_s
        self._sampler = distribution.sampler()
        self._floor_bps = distribution.floor_bps
        self._rng = rng
        self._chunk_index = -1
        self._chunk = np.empty(0)

    def interval(self, t: float) -> int:
        """The ``k`` with ``k·hold <= t < (k+1)·hold`` (the products as computed)."""
        hold = self._hold_s
        k = max(int(t // hold), 0)
        while (k + 1) * hold <= t:
            k += 1
        while k > 0 and k * hold > t:
            k -= 1
        return k

    def draw(self, k: int) -> float:
        """The value (bit/s) of interval ``k``, clipped to the distribution's floor."""
        index = k // CHUNK
        if index < self._chunk_index:
            raise SocsimError(f"random capacity: interval {k} is in the past")
        while self._chunk_index < index:
            self._chunk = np.maximum(self._sampler(self._rng, CHUNK), self._floor_bps)
            self._chunk_index += 1
        return float(self._chunk[k % CHUNK])

    def at(self, t: float) -> float:
        """Capacity (bit/s) at time ``t``."""
        if self._static.at(t) == 0:
            return 0.0
        return self.draw(self.interval(t))

    def next_change_after(self, t: float) -> float:
        """The next hold boundary or static step after ``t``."""
        return min(self._static.next_change_after(t), (self.interval(t) + 1) * self._hold_s)
