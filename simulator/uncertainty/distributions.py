"""Distributions of uncertain figures, and their draws (pure functions of an rng).

A field's valid range (:class:`Interval`) comes from its schema (``gt``, ``ge``, ``le``
of its :class:`~simulator.schema.Number`). A normal distribution is truncated to it by
inverting the CDF: one uniform ``u`` in ``[Φ(a), Φ(b))`` gives ``μ + σ Φ⁻¹(u)``, so every
draw lies in the range and consumes exactly one number of the stream (no rejection
loop whose length depends on the values). A uniform distribution's bounds are checked
to lie in the range when it is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

_STANDARD = NormalDist()
#: smallest probability handed to the inverse CDF (it needs 0 < p < 1)
_TINY = 1e-300


@dataclass(frozen=True)
class Interval:
    """A field's valid range in the units it is written in (YAML units).

    ``low_open``: the low end is excluded (``gt``); the high end, when finite, is
    included (``le``), as the scenario schema's bounds are.
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False

    def __contains__(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def clamp(self, value: float) -> float:
        """``value`` moved into the interval (an excluded end becomes the next float)."""
        if value > self.high:
            value = self.high
        if value < self.low or (self.low_open and value <= self.low):
            value = math.nextafter(self.low, math.inf) if self.low_open else self.low
        return value

    def describe(self) -> str:
        low = "(" if self.low_open else "["
        return f"{low}{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class Normal:
    """``N(mean, sd²)`` truncated to the field's interval; the nominal value is ``mean``."""

    mean: float
    sd: float

    @property
    def nominal(self) -> float:
        return self.mean

    def draw(self, rng: np.random.Generator, interval: Interval) -> float:
        """One value in ``interval`` (inverse-CDF truncation; one uniform of ``rng``)."""
        u = float(rng.random())
        if self.sd == 0:
            return interval.clamp(self.mean)
        a = _STANDARD.cdf((interval.low - self.mean) / self.sd) if interval.low > -math.inf else 0
        b = _STANDARD.cdf((interval.high - self.mean) / self.sd) if interval.high < math.inf else 1
        p = a + u * (b - a)
        # inv_cdf needs 0 < p < 1; the ends are reached only through rounding
        p = min(max(p, _TINY), math.nextafter(1.0, 0.0))
        return interval.clamp(self.mean + self.sd * _STANDARD.inv_cdf(p))


@dataclass(frozen=True)
class Uniform:
    """Uniform on ``[low, high]``; the nominal value is the midpoint."""

    low: float
    high: float

    @property
    def nominal(self) -> float:
        return (self.low + self.high) / 2

    def draw(self, rng: np.random.Generator, interval: Interval) -> float:
        """One value in ``[low, high)`` (one uniform of ``rng``)."""
        u = float(rng.random())
        return interval.clamp(self.low + u * (self.high - self.low))


Distribution = Normal | Uniform
