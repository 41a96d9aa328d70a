"""A unit's DVFS state: the governor is asked at every op start (pure, no SimPy).

The engine keeps one per DVFS unit during a run; the list-schedule estimate replays a
fresh one over a lone request's op starts, so both pick levels with the same code (the
governor's own function from :data:`~simulator.hardware.governors.GOVERNORS`).

The utilisation a governor sees is the unit's busy fraction over the governor's window
just before the op starts (ops already scheduled to run into the future count up to
now), so decisions need no periodic timer. A level holds for the whole op.

The busy time is kept exactly, as integer multiples of a power of two of seconds
(every float is one), and rounded to a float once per decision: it is the correctly
rounded value of the exact busy time, whatever the order the intervals arrived and left
in, and each decision costs O(1) amortised instead of a pass over the window
(docs/performance.md).
"""

from __future__ import annotations

import heapq
from collections import deque

from simulator.errors import SimulationError
from simulator.hardware.governors import GOVERNORS, GovernorInput
from simulator.hardware.units import ComputeUnit


class BusyWindow:
    """The exact busy time of a unit's op intervals inside ``[now - window_s, now]``.

    Intervals ``[a, b]`` are recorded in order of ``a`` and queried at non-decreasing
    ``now >= a``. With ``start = now - window_s``, the busy time is
    ``sum(max(0, min(b, now) - max(a, start)))``, which splits into three running totals:

    * the lengths ``b - a`` of the intervals with ``a >= start`` (a queue in order of
      ``a``: an interval leaves it once ``a < start``);
    * minus ``b - now`` for the intervals still running (``b > now``; a heap on ``b``);
    * plus ``b - start`` for the intervals that started before the window and end
      inside or after it (``a < start < b``; a heap on ``b``).

    Every interval enters and leaves each structure once, and the heaps hold only
    intervals running at ``now`` or at ``start``, so a query costs O(1) amortised (times
    the log of the unit's concurrency). The totals are Python ints counting units of
    2**-exponent s; the exponent grows (and every stored int is shifted) when a time
    needs a finer unit, so the ints stay small (about 60 bits for times of seconds).
    """

    __slots__ = (
        "_exponent",
        "_in_window",
        "_last_now",
        "_last_start",
        "_now_exact",
        "_running",
        "_running_b",
        "_straddling",
        "_straddling_b",
        "_unit",
        "_window_total",
        "window_s",
    )

    def __init__(self, window_s: float):
        if not window_s > 0:
            raise SimulationError(f"busy window: window_s must be > 0, got {window_s!r}")
        self.window_s = window_s
        self._exponent = 0
        self._unit = 1  # 2**exponent: the busy time in seconds is the total / _unit
        self._in_window: deque[list] = deque()  # [a, b, exact b, exact b - a]
        self._window_total = 0  # sum of b - a over _in_window
        self._running: list[list] = []  # heap of [b, exact b] with b > now
        self._running_b = 0
        self._straddling: list[list] = []  # heap of [b, exact b] with a < start < b
        self._straddling_b = 0
        self._last_now = 0.0
        self._now_exact = 0
        self._last_start = 0.0

    def _exact(self, t: float) -> int:
        """``t`` (s, finite, >= 0) in the current unit, exactly: refines the unit first if
        ``t`` is not a multiple of it (every finite float is a multiple of 2**-1074)."""
        n, d = t.as_integer_ratio()  # d is a power of two
        shift = self._exponent + 1 - d.bit_length()
        if shift < 0:
            self._refine(self._exponent - shift)
            shift = 0
        return n << shift

    def _refine(self, exponent: int) -> None:
        """Count in units of 2**-exponent s from now on: shift every stored int."""
        shift = exponent - self._exponent
        self._exponent = exponent
        self._unit = 1 << exponent
        self._window_total <<= shift
        self._running_b <<= shift
        self._straddling_b <<= shift
        self._now_exact <<= shift
        for item in self._in_window:
            item[2] <<= shift
            item[3] <<= shift
        for item in self._running:
            item[1] <<= shift
        for item in self._straddling:
            item[1] <<= shift

    def record(self, start_s: float, end_s: float) -> None:
        """Add the interval ``[start_s, end_s]`` (s); starts come in time order."""
        if not self._last_start <= start_s <= end_s:
            raise SimulationError(
                f"busy window: interval [{start_s!r}, {end_s!r}] out of order "
                f"(needs {self._last_start!r} <= start <= end)"
            )
        self._last_start = start_s
        b = self._exact(end_s)  # first: it may refine the unit
        # the engine records an op at the instant it asked: reuse that conversion
        a = self._now_exact if start_s == self._last_now else self._exact(start_s)
        length = b - a
        self._in_window.append([start_s, end_s, b, length])
        self._window_total += length
        heapq.heappush(self._running, [end_s, b])
        self._running_b += b

    def busy_s(self, now: float) -> float:
        """The busy time (s) in ``[now - window_s, now]``, correctly rounded.

        Several overlapping intervals (a unit with several slots) each count.
        """
        if not (now >= self._last_now and now >= self._last_start):
            raise SimulationError(
                f"busy window: query at {now!r} s before an earlier query or interval start"
            )
        now_exact = self._exact(now)
        self._last_now = now
        self._now_exact = now_exact
        start = now - self.window_s
        running = self._running
        while running and running[0][0] <= now:
            self._running_b -= heapq.heappop(running)[1]
        straddling = self._straddling
        queue = self._in_window
        while queue and queue[0][0] < start:
            _, b_s, b, length = queue.popleft()
            self._window_total -= length
            if b_s > start:
                heapq.heappush(straddling, [b_s, b])
                self._straddling_b += b
        while straddling and straddling[0][0] <= start:
            self._straddling_b -= heapq.heappop(straddling)[1]
        # converting start may refine the unit, so it comes before the sum
        start_exact = self._exact(start) if straddling else 0
        busy = self._window_total - self._running_b + self._straddling_b
        if running:
            busy += len(running) * self._now_exact
        if straddling:
            busy -= len(straddling) * start_exact
        # int / int is correctly rounded in Python, whatever the sizes
        return busy / self._unit


class DvfsState:
    """Level and recent busy intervals of one DVFS unit.

    The per-level figures an op start needs (time scale, busy power) are computed once
    here, the same expressions as :class:`~simulator.hardware.dvfs.DvfsTable`'s, so an
    op's time and energy are the same floats; an op's time parts are checked once when
    the engine is built (:meth:`check_parts`), not at every start.
    """

    __slots__ = (
        "_busy",
        "_busy_w",
        "_ran",
        "_scale",
        "cap",
        "changes",
        "function",
        "level",
        "options",
        "slots",
        "table",
        "window_s",
    )

    def __init__(self, unit: ComputeUnit):
        self.table = unit.dvfs
        self.function = GOVERNORS.get(unit.governor).function
        self.options = dict(unit.governor_options)
        self.window_s = self.options.get("window_s", 0.0)
        self.slots = unit.slots
        self.level = self.table.top
        self.cap: int | None = None  # thermal cap on the level (None: not throttled)
        # windowed governors see the exact busy time; the others only whether an op ran
        self._busy = BusyWindow(self.window_s) if self.window_s > 0 else None
        self._ran = False
        # (time, level) at t = 0 and at every op start that moved the level: levels only
        # change there, so this is the unit's level over time (the ``dvfs_levels`` table)
        self.changes: list[tuple[float, int]] = [(0.0, self.level)]
        levels = range(self.table.top + 1)
        self._scale = tuple(self.table.time_scale(level) for level in levels)
        self._busy_w = tuple(self.table.active_power_w(level) for level in levels)

    def check_parts(self, fixed_s: float, compute_s: float, memory_s: float) -> None:
        """Raise :class:`SocsimError` unless an op's time parts (s) are finite and >= 0."""
        self.table.op_time_at_level_s(compute_s, memory_s, fixed_s, self.table.top)

    def utilisation(self, now: float) -> float:
        """The busy fraction (0..1) the governor sees for an op starting at ``now`` (s)."""
        if self._busy is None:
            return 1.0 if self._ran else 0.0
        return min(self._busy.busy_s(now) / (self.window_s * self.slots), 1.0)

    def start(
        self, now: float, fixed_s: float, compute_s: float, memory_s: float
    ) -> tuple[int, float, float]:
        """An op starts now: (its level, its time at the level in s, the unit's busy power
        at the level in W). Its parts were checked by :meth:`check_parts`."""
        level = self.decide(now)
        duration_s = fixed_s + max(compute_s * self._scale[level], memory_s)
        self.record(now, now + duration_s)
        return level, duration_s, self._busy_w[level]

    def decide(self, now: float) -> int:
        """The level for an op starting now."""
        state = GovernorInput.trusted(self.utilisation(now), self.level, self.cap)
        level = self.function(self.table, state, self.options)
        if level != self.level:
            level = self.table.check_level(level)  # a level of the table (checked on change)
            changes = self.changes
            if changes[-1][0] == now:  # two ops started at this instant: the last one holds
                changes.pop()
            if not changes or changes[-1][1] != level:
                changes.append((now, level))
            self.level = level
        return level

    def record(self, start_s: float, end_s: float) -> None:
        """Note an op running on the unit over ``[start_s, end_s]`` (s)."""
        self._ran = True
        if self._busy is not None:
            self._busy.record(start_s, end_s)


def constant_level(unit: ComputeUnit) -> int | None:
    """The level ``unit``'s governor picks whatever the unit's history, else None.

    True of a governor without a sampling window that answers the same for every
    current level and for both utilisations it can see (0 before the unit's first op, 1
    after), unthrottled: ``performance`` (the top), ``powersave`` (0), ``fixed``. Asked
    of the governor's own function, so a new governor is classified without a list.
    None also for a unit without a DVFS table.
    """
    table = unit.dvfs
    if table is None:
        return None
    state = DvfsState(unit)
    if state.window_s > 0:
        return None
    answers = {
        state.function(table, GovernorInput.trusted(u, current, None), state.options)
        for u in (0.0, 1.0)
        for current in range(table.top + 1)
    }
    return answers.pop() if len(answers) == 1 else None
