"""DVFS operating points and the power/time of work at each level (pure, SI units).

A unit's :class:`DvfsTable` lists its operating points in ascending frequency; a
*level* is an index into that list (0 = slowest, ``table.top`` = fastest). The model:

* **Power while busy** at level ``l``: ``P(l) = static_w + C · f_l · V_l²`` — leakage
  plus CMOS switching power with effective switched capacitance ``C`` (F).
  ``static_w`` is the same at every level (a simplification: real leakage falls with
  voltage). ``idle_w`` is drawn while the unit is idle, at any level (clock- and
  power-gated between ops), so an op costs ``P(l) − idle_w`` above the idle baseline.
* **Time** of an op whose roofline parts were measured at the top frequency
  (``compute_s``, ``memory_s``; see :mod:`simulator.hardware.cost`):
  ``dispatch_s + max(compute_s × f_max / f_l, memory_s)``. Only the compute-bound part
  stretches at a lower clock; DRAM streaming does not (the memory clock is not
  scaled), nor does the fixed per-op overhead.
* **Energy** of an op: ``P(l) × share × t(l)``, ``share = cores_per_op / cores``.

``fit_capacitance`` picks ``C`` so that the top point draws a preset's ``active_w``:
existing presets keep their meaning (``active_w`` = power at the top point).

Race-to-idle vs slow-and-steady: for a compute-bound op of ``t0`` seconds at ``f_max``
inside a window ``W``, the unit's energy over the window at level ``l`` is
``P(l) · t0 · f_max / f_l + idle_w · (W − t0 · f_max / f_l)``. Lowering ``f`` saves
switching energy (``C · V² · cycles`` falls with ``V``) but stretches the time that
``static_w − idle_w`` is paid; which wins depends on the static power (see
:func:`window_energy_j` and ``tests/hardware/test_dvfs.py``).

The governors that choose a level at run time are in :mod:`simulator.hardware.governors`.
"""

from __future__ import annotations

import math
import numbers
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from simulator.errors import SocsimError


def is_integer(value: object) -> bool:
    """True for ints (numpy's too), False for bools and floats."""
    if type(value) is int:  # the common case, without the abstract-class check
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _positive_finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _nonneg_finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def lowest_level_at_least(
    frequencies_hz: Sequence[float], frequency_hz: float, ceiling: int
) -> int:
    """The lowest level of ``frequencies_hz`` (strictly ascending) whose frequency is >=
    ``frequency_hz`` with a relative tolerance of 1e-9, at most ``ceiling`` (returned when
    no level up to it is fast enough, or when ``frequency_hz`` is NaN).

    A binary search: governors ask at every op start on a DVFS unit.
    """
    level = bisect_left(frequencies_hz, frequency_hz * (1 - 1e-9))
    if level > ceiling or frequency_hz != frequency_hz:  # NaN: no level is >= it
        return ceiling
    return level


@dataclass(frozen=True)
class OperatingPoint:
    """One DVFS operating point: a clock frequency and the supply voltage it needs.

    Attributes
    ----------
    frequency_hz : float
        Clock frequency (Hz), > 0.
    voltage_v : float
        Supply voltage at that frequency (V), > 0.
    """

    frequency_hz: float
    voltage_v: float

    def __post_init__(self) -> None:
        if not _positive_finite(self.frequency_hz):
            raise SocsimError(f"operating point: frequency must be > 0, got {self.frequency_hz}")
        if not _positive_finite(self.voltage_v):
            raise SocsimError(f"operating point: voltage must be > 0, got {self.voltage_v}")


def fit_capacitance(
    f_max_hz: float, v_max_v: float, active_w_at_max: float, static_w: float
) -> float:
    """Effective switched capacitance (F) that makes the top point draw ``active_w_at_max``.

    ``C = (active_w_at_max − static_w) / (f_max · V_max²)``, so that
    ``static_w + C · f_max · V_max² = active_w_at_max``.

    Raises
    ------
    SocsimError
        When ``active_w_at_max <= static_w`` (no dynamic power left) or an input is not
        positive.
    """
    if not _positive_finite(f_max_hz) or not _positive_finite(v_max_v):
        raise SocsimError("fit_capacitance: frequency and voltage must be > 0")
    if not _nonneg_finite(static_w) or not _positive_finite(active_w_at_max):
        raise SocsimError("fit_capacitance: powers must be finite, active > 0, static >= 0")
    if not active_w_at_max > static_w:
        raise SocsimError(
            f"fit_capacitance: active power at the top point ({active_w_at_max} W) must "
            f"exceed the static power ({static_w} W)"
        )
    return (active_w_at_max - static_w) / (f_max_hz * v_max_v**2)


@dataclass(frozen=True)
class DvfsTable:
    """The operating points of one unit and its power model.

    Attributes
    ----------
    points : tuple of OperatingPoint
        Strictly ascending frequency; voltage must not fall as frequency rises.
    switched_capacitance_f : float
        Effective ``C`` (F) in ``P_dyn = C · f · V²``.
    static_w : float
        Leakage power while busy, the same at every level (W).
    idle_w : float
        Power while idle, at any level (W); at most the busy power of the lowest point.
    """

    points: tuple[OperatingPoint, ...]
    switched_capacitance_f: float
    static_w: float = 0.0
    idle_w: float = 0.0

    def __post_init__(self) -> None:
        points = tuple(self.points)
        object.__setattr__(self, "points", points)
        if not points:
            raise SocsimError("DVFS table: needs at least one operating point")
        for i, point in enumerate(points):
            if not isinstance(point, OperatingPoint):
                raise SocsimError(f"DVFS table: point {i} is not an OperatingPoint: {point!r}")
        for i in range(1, len(points)):
            low, high = points[i - 1], points[i]
            if not high.frequency_hz > low.frequency_hz:
                raise SocsimError(
                    f"DVFS table: frequencies must strictly ascend; point {i} "
                    f"({high.frequency_hz:g} Hz) is not above point {i - 1} "
                    f"({low.frequency_hz:g} Hz)"
                )
            if high.voltage_v < low.voltage_v:
                raise SocsimError(
                    f"DVFS table: voltage must not fall as frequency rises; point {i} "
                    f"({high.voltage_v:g} V) is below point {i - 1} ({low.voltage_v:g} V)"
                )
        if not _positive_finite(self.switched_capacitance_f):
            raise SocsimError(
                f"DVFS table: switched capacitance must be > 0, got {self.switched_capacitance_f}"
            )
        if not _nonneg_finite(self.static_w) or not _nonneg_finite(self.idle_w):
            raise SocsimError("DVFS table: static_w and idle_w must be finite and >= 0")
        if self.idle_w > self.active_power_w(0):
            raise SocsimError(
                f"DVFS table: idle_w ({self.idle_w} W) exceeds the busy power of the lowest "
                f"point ({self.active_power_w(0)} W)"
            )

    @classmethod
    def fitted(
        cls,
        points: Sequence[OperatingPoint],
        active_w_at_top: float,
        static_w: float = 0.0,
        idle_w: float = 0.0,
    ) -> DvfsTable:
        """A table whose ``C`` is fitted so the top point draws ``active_w_at_top``."""
        points = tuple(points)
        if not points:
            raise SocsimError("DVFS table: needs at least one operating point")
        top = max(points, key=lambda p: p.frequency_hz)
        capacitance = fit_capacitance(top.frequency_hz, top.voltage_v, active_w_at_top, static_w)
        return cls(points, capacitance, static_w, idle_w)

    # -- levels ------------------------------------------------------------------------
    @cached_property  # read at every governor decision: computed once per table
    def top(self) -> int:
        """The fastest level."""
        return len(self.points) - 1

    @cached_property
    def f_max_hz(self) -> float:
        return self.points[-1].frequency_hz

    def check_level(self, level: int) -> int:
        """``level`` itself, or :class:`SocsimError` when it is not a level of this table."""
        if type(level) is int and 0 <= level <= self.top:  # asked at every op start
            return level
        if not is_integer(level) or not 0 <= level <= self.top:
            raise SocsimError(f"DVFS level must be an integer in 0..{self.top}, got {level!r}")
        return int(level)

    def frequency_hz(self, level: int) -> float:
        return self.points[self.check_level(level)].frequency_hz

    def voltage_v(self, level: int) -> float:
        return self.points[self.check_level(level)].voltage_v

    @cached_property
    def frequencies_hz(self) -> tuple[float, ...]:
        """Every level's frequency (Hz), ascending: what a governor's rule looks up."""
        return tuple(point.frequency_hz for point in self.points)

    def lowest_level_at_least(self, frequency_hz: float, ceiling: int | None = None) -> int:
        """The lowest level whose frequency is >= ``frequency_hz``, at most ``ceiling``.

        Returns ``ceiling`` (default: the top) when no level up to it is fast enough.
        A relative tolerance of 1e-9 absorbs rounding in computed targets.
        """
        ceiling = self.top if ceiling is None else self.check_level(ceiling)
        return lowest_level_at_least(self.frequencies_hz, frequency_hz, ceiling)

    def highest_level_at_most(self, frequency_hz: float) -> int:
        """The highest level whose frequency is <= ``frequency_hz`` (level 0 if none is)."""
        best = 0
        for level, point in enumerate(self.points):
            if point.frequency_hz <= frequency_hz * (1 + 1e-9):
                best = level
        return best

    # -- power -------------------------------------------------------------------------
    def dynamic_power_w(self, level: int) -> float:
        """Switching power ``C · f · V²`` (W) at ``level``."""
        point = self.points[self.check_level(level)]
        return self.switched_capacitance_f * point.frequency_hz * point.voltage_v**2

    def active_power_w(self, level: int) -> float:
        """Total power (W) while the whole unit is busy at ``level``: ``static_w + C·f·V²``.

        This is the total, not an increment: it replaces ``idle_w`` while busy (the
        increment above idle is :meth:`busy_increment_w`).
        """
        return self.static_w + self.dynamic_power_w(level)

    def busy_increment_w(self, level: int) -> float:
        """Power (W) above ``idle_w`` while the whole unit is busy at ``level``."""
        return self.active_power_w(level) - self.idle_w

    # -- time --------------------------------------------------------------------------
    def time_scale(self, level: int) -> float:
        """``f_max / f_level``: how many times longer compute-bound work takes at ``level``."""
        return self.f_max_hz / self.frequency_hz(level)

    def op_time_at_level_s(
        self, compute_s: float, memory_s: float, dispatch_s: float, level: int
    ) -> float:
        """Time (s) of an op at ``level``: ``dispatch_s + max(compute_s × f_max/f, memory_s)``.

        Parameters
        ----------
        compute_s, memory_s : float
            The roofline's compute-bound and memory-bound times at the top frequency
            (:func:`~simulator.hardware.cost.compute_time_s`, ``memory_time_s``).
        dispatch_s : float
            Fixed per-op overhead that does not scale (dispatch plus barrier).
        """
        for label, value in (("compute_s", compute_s), ("memory_s", memory_s)):
            if not _nonneg_finite(value):
                raise SocsimError(f"op time: {label} must be finite and >= 0, got {value}")
        if not _nonneg_finite(dispatch_s):
            raise SocsimError(f"op time: dispatch_s must be finite and >= 0, got {dispatch_s}")
        return dispatch_s + max(compute_s * self.time_scale(level), memory_s)

    def rescaled_remaining_s(
        self,
        remaining_s: float,
        compute_s: float,
        memory_s: float,
        dispatch_s: float,
        old_level: int,
        new_level: int,
    ) -> float:
        """Remaining time (s) of a running op when its unit changes level mid-op.

        The op's progress fraction ``1 − remaining / t(old)`` is kept and the rest runs at
        the new level's pace: ``remaining × t(new) / t(old)`` (the op's compute/memory mix
        is taken as uniform over its run).
        """
        old = self.op_time_at_level_s(compute_s, memory_s, dispatch_s, old_level)
        new = self.op_time_at_level_s(compute_s, memory_s, dispatch_s, new_level)
        if old == 0:
            return 0.0
        return remaining_s * new / old

    # -- energy ------------------------------------------------------------------------
    def energy_of_op_j(
        self,
        compute_s: float,
        memory_s: float,
        dispatch_s: float,
        level: int,
        share: float = 1.0,
    ) -> float:
        """Energy (J) drawn while the op runs: ``active_power_w(level) × share × t(level)``.

        ``share`` is ``cores_per_op / cores`` (1 when the op uses the whole unit), as in
        :func:`simulator.hardware.cost.op_energy_j`.
        """
        if not 0 < share <= 1:
            raise SocsimError(f"op energy: share must be in (0, 1], got {share}")
        seconds = self.op_time_at_level_s(compute_s, memory_s, dispatch_s, level)
        return self.active_power_w(level) * share * seconds

    def window_energy_j(self, busy_s: float, window_s: float, level: int) -> float:
        """Unit energy (J) over a window: ``P(level) · busy + idle_w · (window − busy)``."""
        if not 0 <= busy_s <= window_s:
            raise SocsimError(
                f"window energy: busy time {busy_s} s must lie within the window {window_s} s"
            )
        return self.active_power_w(level) * busy_s + self.idle_w * (window_s - busy_s)


__all__ = ["DvfsTable", "OperatingPoint", "fit_capacitance"]
