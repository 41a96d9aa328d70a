"""Stochastic execution time and background load on a unit (pure: no SimPy).

Two ways a unit's op times depart from the cost model's figure (docs/stochastic.md):

* **Execution-time variation** (:class:`TimeVariation`): each op's time is the cost
  model's time multiplied by a random factor of mean 1 and coefficient of variation
  ``cv`` (sd / mean), drawn when the op starts. The mean is preserved, so the cost
  model's figure stays the expected time:

  - ``lognormal``: ``exp(N(mu, sigma²))`` with ``sigma² = ln(1 + cv²)`` and
    ``mu = -sigma² / 2``;
  - ``gamma``: shape ``k = 1 / cv²``, scale ``cv²``;
  - ``exponential``: mean 1, cv 1 (a gamma of shape 1: M/M/1 service for queueing
    checks);
  - ``deterministic``: always 1 (as if no variation were given).

* **Background load** (:class:`BackgroundLoad`): work the scenario does not model (other
  apps, the OS) keeps a share ``u(t)`` of the unit busy. Processor sharing: an op runs
  at ``1 - u(t)`` of its speed, so a piece of work of ``w`` seconds at full speed that
  starts at ``t0`` ends at the ``t1`` where ``∫_{t0}^{t1} (1 - u(τ)) dτ = w``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from simulator.errors import SocsimError

#: The execution-time distributions (all of mean 1).
DISTRIBUTIONS: tuple[str, ...] = ("deterministic", "exponential", "gamma", "lognormal")
#: Highest background utilisation: at 1 an op would never end.
MAX_UTILISATION = 0.99


@dataclass(frozen=True)
class TimeVariation:
    """A distribution of mean 1 that multiplies an op's time.

    Attributes
    ----------
    distribution : str
        One of :data:`DISTRIBUTIONS`.
    cv : float
        Coefficient of variation (sd / mean) of the factor; 1 for ``exponential`` and 0
        for ``deterministic`` whatever is given.
    """

    distribution: str
    cv: float = 0.0

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise SocsimError(
                f"unknown execution-time distribution '{self.distribution}'; "
                f"valid: {', '.join(DISTRIBUTIONS)}"
            )
        fixed = {"exponential": 1.0, "deterministic": 0.0}.get(self.distribution)
        if fixed is not None:
            object.__setattr__(self, "cv", fixed)
        if not (math.isfinite(self.cv) and self.cv >= 0):
            raise SocsimError(f"execution-time cv must be a finite number >= 0, got {self.cv}")

    @property
    def varies(self) -> bool:
        """Whether a draw can differ from 1."""
        return self.cv > 0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` factors of mean 1 and coefficient of variation :attr:`cv`."""
        cv = self.cv
        if cv == 0:
            return np.ones(n)
        if self.distribution == "lognormal":
            sigma2 = math.log1p(cv * cv)
            return rng.lognormal(-sigma2 / 2, math.sqrt(sigma2), n)
        if self.distribution == "exponential":
            return rng.exponential(1.0, n)
        shape = 1.0 / (cv * cv)  # gamma
        return rng.gamma(shape, cv * cv, n)


def variation_for(variation: Mapping[str, TimeVariation], kind: str) -> TimeVariation | None:
    """The variation of op kind ``kind`` on a unit: its own entry, else ``default``, else
    None (the kind's ops keep the cost model's time)."""
    chosen = variation.get(kind, variation.get("default"))
    return chosen if chosen is not None and chosen.varies else None


@dataclass(frozen=True)
class BackgroundLoad:
    """A unit's background utilisation, a step function of time.

    Attributes
    ----------
    points : tuple of (time_s, utilisation)
        Strictly ascending times; each utilisation in [0, :data:`MAX_UTILISATION`] holds
        from its time until the next point's (the last one forever). Before the first
        time the utilisation is 0.
    """

    points: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        points = tuple((float(t), float(u)) for t, u in self.points)
        object.__setattr__(self, "points", points)
        if not points:
            raise SocsimError("a background load needs at least one [time_s, utilisation] point")
        for k, (t, u) in enumerate(points):
            if not (math.isfinite(t) and t >= 0):
                raise SocsimError(f"background point {k}: time must be >= 0, got {t}")
            if not 0 <= u <= MAX_UTILISATION:
                raise SocsimError(
                    f"background point {k}: utilisation must be in [0, {MAX_UTILISATION}] "
                    f"(at 1 an op never ends), got {u}"
                )
            if k and not t > points[k - 1][0]:
                raise SocsimError(
                    f"background point {k}: times must increase, got {t} after {points[k - 1][0]}"
                )

    @classmethod
    def constant(cls, utilisation: float) -> BackgroundLoad:
        """A utilisation that holds from t = 0 on."""
        return cls(((0.0, utilisation),))

    def utilisation_at(self, t_s: float) -> float:
        """The background utilisation at ``t_s`` (s)."""
        k = bisect_right([t for t, _ in self.points], t_s) - 1
        return self.points[k][1] if k >= 0 else 0.0

    def stretch_s(self, start_s: float, work_s: float) -> float:
        """How long ``work_s`` seconds of full-speed work take from ``start_s`` (s).

        Processor sharing: the op runs at ``1 - u(t)``. With a constant ``u`` this is
        exactly ``work_s / (1 - u)``.
        """
        if work_s <= 0:
            return work_s
        points = self.points
        k = bisect_right([t for t, _ in points], start_s) - 1  # -1: before the first point
        elapsed_s, now_s, left_s = 0.0, start_s, work_s
        while True:
            u = points[k][1] if k >= 0 else 0.0
            speed = 1.0 - u
            if k + 1 == len(points):  # the last step holds forever
                return elapsed_s + left_s / speed
            span_s = points[k + 1][0] - now_s
            if left_s <= span_s * speed:
                return elapsed_s + left_s / speed
            left_s -= span_s * speed
            elapsed_s += span_s
            now_s = points[k + 1][0]
            k += 1
