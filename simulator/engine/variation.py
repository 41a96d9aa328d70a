"""Stochastic op times and background load at run time (docs/stochastic.md).

One job: give an op that starts now the time it really takes on its unit, from the cost
model's time: multiplied by a draw of the unit's execution-time variation for the op's
kind, then stretched by the unit's background load (processor sharing). The pure models
are :mod:`simulator.hardware.variation`; this module holds the random streams.

Streams: each (unit, variation entry) draws from its own
``SeedSequence(seed, spawn_key=(replicate, EXEC_STREAMS, h))`` with ``h`` a stable hash
of ``unit:kind`` (``kind`` is the entry's key: an op kind or ``default``), so adding an
app, a link or another unit's variation changes no other stream. Draws are taken in the
order ops start on the unit, which the event order fixes: the same scenario, seed and
replicate give the same times bit for bit.
"""

from __future__ import annotations

import numpy as np

from simulator.hardware.variation import BackgroundLoad, TimeVariation, variation_for
from simulator.platform import Platform
from simulator.seeds import named_seed

#: Keeps execution-time streams apart from the apps' and links' ("exec" in ASCII).
EXEC_STREAMS = 0x65786563
#: Factors drawn at once (one numpy call per this many op starts).
_BATCH = 1024


def variation_seed(seed: int, replicate: int, uid: str, kind: str) -> np.random.SeedSequence:
    """The SeedSequence of unit ``uid``'s variation entry ``kind`` (stable across runs)."""
    return named_seed(seed, replicate, EXEC_STREAMS, f"{uid}:{kind}")


class Stretch:
    """The real time of ops of one kind on one unit.

    Parameters
    ----------
    variation : TimeVariation or None
        The factor's distribution (None: the cost model's time).
    rng : numpy.random.Generator or None
        Its stream (None with no variation).
    background : BackgroundLoad or None
        The unit's background load (None: the unit is the scenario's alone).
    """

    __slots__ = ("_factors", "_next", "_rng", "background", "variation")

    def __init__(
        self,
        variation: TimeVariation | None,
        rng: np.random.Generator | None,
        background: BackgroundLoad | None,
    ):
        self.variation = variation
        self._rng = rng
        self.background = background
        self._factors: list[float] = []
        self._next = 0

    def factor(self) -> float:
        """The next factor of the stream (1.0 without variation)."""
        if self.variation is None or self._rng is None:
            return 1.0
        k = self._next
        if k == len(self._factors):
            self._factors = self.variation.draw(self._rng, _BATCH).tolist()
            k = 0
        self._next = k + 1
        return self._factors[k]

    def real_s(self, now: float, duration_s: float, factor: float) -> float:
        """The time (s) an op of cost-model time ``duration_s`` starting ``now`` takes
        with ``factor`` drawn: scaled, then stretched by the background load."""
        duration_s = duration_s * factor
        if self.background is not None:
            duration_s = self.background.stretch_s(now, duration_s)
        return duration_s

    def duration_s(self, now: float, duration_s: float) -> float:
        """The time (s) an op of cost-model time ``duration_s`` starting ``now`` takes."""
        return self.real_s(now, duration_s, self.factor())


class Stretches:
    """Every unit's :class:`Stretch` per op kind, built on first use (one per variation
    entry, so kinds that fall back to ``default`` share its stream)."""

    def __init__(self, platform: Platform, seed: int, replicate: int):
        self.platform = platform
        self.seed = seed
        self.replicate = replicate
        self._made: dict[tuple[str, str], Stretch] = {}

    def get(self, uid: str, kind: str) -> Stretch | None:
        """The stretch of op kind ``kind`` on unit ``uid``; None when its ops keep the
        cost model's time (no variation for the kind, no background load)."""
        unit = self.platform.unit(uid)
        variation = variation_for(unit.variation, kind)
        if variation is None and unit.background is None:
            return None
        entry = (kind if kind in unit.variation else "default") if variation else ""
        made = self._made.get((uid, entry))
        if made is None:
            rng = None
            if variation is not None:
                rng = np.random.default_rng(variation_seed(self.seed, self.replicate, uid, entry))
            made = self._made[(uid, entry)] = Stretch(variation, rng, unit.background)
        return made
