"""A unit's DVFS state: the governor is asked at every op start (pure, no SimPy).

The engine keeps one per DVFS unit during a run; the list-schedule estimate replays a
fresh one over a lone request's op starts, so both pick levels with the same code (the
governor prepared once as a rule, :func:`~simulator.hardware.governors.governor_rule`).

The utilisation a governor sees is the unit's busy fraction over the governor's window
just before the op starts (ops already scheduled to run into the future count up to
now), so decisions need no periodic timer. A level holds for the whole op.

The busy time is kept exactly, as integer multiples of a power of two of seconds
(every float is one), and rounded to a float once per decision: it is the correctly
rounded value of the exact busy time, whatever the order the intervals arrived and left
in, and each decision costs O(1) amortised instead of a pass over the window
(``bench/dvfs_window.py``; docs/performance.md).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

from simulator.errors import SimulationError
from simulator.hardware.governors import governor_rule, rule_is_monotone
from simulator.hardware.units import ComputeUnit

#: The finest unit (2**-FINEST_SCALED s) in which a busy time is converted to seconds by
#: scaling its float by a power of two (an int / int division costs ~1 us): the busy
#: time is then 0 or at least 2**-900 s, so the product is a normal float (the scaling
#: is exact), and its float overflows only past 2**124 s (window x slots). Finer units
#: divide the ints.
FINEST_SCALED = 900


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
        "_inverse",
        "_last_now",
        "_last_start",
        "_now_exact",
        "_running",
        "_running_b",
        "_scale",
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
        self._scale = 1.0  # 2**exponent as a float
        self._inverse = 1.0  # 2**-exponent as a float (0.0: too fine to scale by, divide)
        # tuples, cheaper to build than lists: a refinement (rare) rebuilds them
        self._in_window: deque[tuple] = deque()  # (a, b, exact b, exact b - a)
        self._window_total = 0  # sum of b - a over _in_window
        self._running: list[tuple] = []  # heap of (b, exact b) with b > now
        self._running_b = 0
        self._straddling: list[tuple] = []  # heap of (b, exact b) with a < start < b
        self._straddling_b = 0
        self._last_now = 0.0
        self._now_exact = 0
        self._last_start = 0.0

    def _exact(self, t: float) -> int:
        """``t`` (s, finite, >= 0) in the current unit, exactly: refines the unit first if
        ``t`` is not a multiple of it (every finite float is a multiple of 2**-1074)."""
        # scaling by a power of two is exact (inf past the float range: the slow path)
        scaled = t * self._scale
        if scaled.is_integer():  # t is a multiple of the unit: the common case
            return int(scaled)
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
        self._scale = math.ldexp(1.0, exponent) if exponent <= 1023 else math.inf
        self._inverse = math.ldexp(1.0, -exponent) if exponent <= FINEST_SCALED else 0.0
        self._rescale(shift)

    def _rescale(self, shift: int) -> None:
        """Shift every stored exact value by ``shift`` bits (the unit was refined)."""
        self._window_total <<= shift
        self._running_b <<= shift
        self._straddling_b <<= shift
        self._now_exact <<= shift
        self._in_window = deque((a, b, x << shift, n << shift) for a, b, x, n in self._in_window)
        # shifting every exact value keeps each heap's order (it is on the float)
        self._running = [(b, x << shift) for b, x in self._running]
        self._straddling = [(b, x << shift) for b, x in self._straddling]

    def record(self, start_s: float, end_s: float) -> None:
        """Add the interval ``[start_s, end_s]`` (s); starts come in time order."""
        if not self._last_start <= start_s <= end_s:
            raise SimulationError(
                f"busy window: interval [{start_s!r}, {end_s!r}] out of order "
                f"(needs {self._last_start!r} <= start <= end)"
            )
        self._last_start = start_s
        b = self._exact(end_s)  # first: it may refine the unit
        exponent = self._exponent
        # the engine records an op at the instant it asked: reuse that conversion
        a = self._now_exact if start_s == self._last_now else self._exact(start_s)
        if self._exponent != exponent:  # converting the start refined the unit
            b = self._exact(end_s)
        length = b - a
        self._in_window.append((start_s, end_s, b, length))
        self._window_total += length
        heappush(self._running, (end_s, b))
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
            self._running_b -= heappop(running)[1]
        straddling = self._straddling
        queue = self._in_window
        while queue and queue[0][0] < start:
            _, b_s, b, length = queue.popleft()
            self._window_total -= length
            if b_s > start:
                heappush(straddling, (b_s, b))
                self._straddling_b += b
        while straddling and straddling[0][0] <= start:
            self._straddling_b -= heappop(straddling)[1]
        # converting start may refine the unit, so it comes before the sum
        start_exact = self._exact(start) if straddling else 0
        busy = self._window_total - self._running_b + self._straddling_b
        if running:
            busy += len(running) * self._now_exact
        if straddling:
            busy -= len(straddling) * start_exact
        return self._seconds(busy)

    def _seconds(self, busy: int) -> float:
        """``busy`` (>= 0, in the current unit) in seconds, correctly rounded."""
        inverse = self._inverse
        if inverse:  # the int's float is correctly rounded; scaling it by 2**-e is exact
            return busy * inverse
        return busy / self._unit  # int / int is correctly rounded, whatever the sizes


class SerialBusyWindow(BusyWindow):
    """:class:`BusyWindow` for a unit that runs one op at a time: the same busy times, in
    fewer steps.

    The intervals never overlap and every one recorded has ended by the next query (a
    one-slot unit starts an op once the previous one is over, and an op never ends
    before the time recorded for it at its level). The busy time in ``[start, now]`` is
    then ``total - cumulative(start)``, with ``total`` the exact sum of every interval's
    length and ``cumulative(start)`` the busy time up to ``start``: the sum of the
    lengths before the first interval still in the queue (kept with it), plus the part
    of that interval before ``start`` when it straddles it. No heap, and the query
    converts a time only when an interval straddles the window's start. The precondition
    is checked (a :class:`SimulationError` if broken).
    """

    __slots__ = ("_end", "_end_exact", "_total")

    def __init__(self, window_s: float):
        super().__init__(window_s)
        # the queue holds (a, b, exact a, exact busy time before a), in order
        self._total = 0  # exact busy time of every interval recorded
        self._end = 0.0  # the last interval's end, and its exact value
        self._end_exact = 0

    def _rescale(self, shift: int) -> None:
        self._total <<= shift
        self._end_exact <<= shift
        self._in_window = deque((a, b, x << shift, c << shift) for a, b, x, c in self._in_window)

    def record(self, start_s: float, end_s: float) -> None:
        """Add the interval ``[start_s, end_s]`` (s), after the previous one's end."""
        if not self._end <= start_s <= end_s:
            raise SimulationError(
                f"busy window: interval [{start_s!r}, {end_s!r}] overlaps the previous one "
                f"or is reversed (a one-slot unit; the previous ended at {self._end!r})"
            )
        b = self._exact(end_s)  # first: it may refine the unit
        exponent = self._exponent
        # back to back (a busy unit): the previous end's conversion is the start's
        a = self._end_exact if start_s == self._end else self._exact(start_s)
        if self._exponent != exponent:  # converting the start refined the unit
            b = self._exact(end_s)
        self._in_window.append((start_s, end_s, a, self._total))
        self._total += b - a
        self._end = end_s
        self._end_exact = b

    def busy_s(self, now: float) -> float:
        """The busy time (s) in ``[now - window_s, now]``, correctly rounded."""
        if now < self._end or now < self._last_now:
            raise SimulationError(
                f"busy window: query at {now!r} s before an earlier query or while the "
                f"interval ending at {self._end!r} s still runs (a one-slot unit)"
            )
        self._last_now = now
        start = now - self.window_s
        queue = self._in_window
        while queue and queue[0][1] <= start:  # over before the window
            queue.popleft()
        if not queue:
            return 0.0
        a_s, _, a, before = queue[0]
        if a_s < start:  # it straddles the start: count from there
            # converting start may refine the unit, so it comes before the reads
            start_exact = self._exact(start)
            _, _, a, before = self._in_window[0]  # (a refinement rebuilds the queue)
            busy = self._total - before - (start_exact - a)
        else:
            busy = self._total - before
        return self._seconds(busy)


#: Bisection steps to each end of the utilisations a monotone rule keeps a level for
#: (:meth:`DvfsState._keeps_span`): the span is found to 2**-20 of a step's range; a
#: utilisation between the found and the true end asks the rule.
SPAN_STEPS = 20
#: Times the rule keeps a level before its span is found: a short run (an estimate's
#: replay of a few ops) never pays the ~2 x SPAN_STEPS questions of a span.
SPAN_AFTER = 16


class DvfsState:
    """Level and recent busy intervals of one DVFS unit.

    The governor is prepared once (:func:`~simulator.hardware.governors.governor_rule`),
    and an op's time and energy at every level are computed once per op of a plan
    (:meth:`op_costs`, the same expressions as :class:`~simulator.hardware.dvfs.DvfsTable`'s,
    so they are the same floats): an op start asks the governor and looks its level up.
    """

    __slots__ = (
        "_busy",
        "_capacity_s",
        "_keeps",
        "_kept",
        "_ran",
        "_rule",
        "busy_w",
        "cap",
        "changes",
        "level",
        "options",
        "scale",
        "slots",
        "table",
        "window_s",
    )

    def __init__(self, unit: ComputeUnit):
        self.table = unit.dvfs
        self.options = dict(unit.governor_options)
        self._rule = governor_rule(unit.governor, self.table, self.options)
        self.window_s = self.options.get("window_s", 0.0)
        self.slots = unit.slots
        self._capacity_s = self.window_s * self.slots  # busy seconds of a full window
        self.level = self.table.top
        self.cap: int | None = None  # thermal cap on the level (None: not throttled)
        # windowed governors see the exact busy time; the others only whether an op ran
        self._busy = None
        if self.window_s > 0:  # one op at a time: the serial window's fewer steps
            window = SerialBusyWindow if self.slots == 1 else BusyWindow
            self._busy = window(self.window_s)
        self._ran = False
        #: per level: the utilisations (low, high) for which the governor keeps that level
        #: unthrottled, or None until asked; None for a rule not known to be monotone
        #: (then every decision asks it) or a governor without a window
        self._keeps: list[tuple[float, float] | None] | None = None
        self._kept: list[int] = []  # per level: times the rule kept it (until its span)
        if self._busy is not None and rule_is_monotone(unit.governor):
            self._keeps = [None] * (self.level + 1)  # the level starts at the top
            self._kept = [0] * (self.level + 1)
        # (time, level) at t = 0 and at every op start that moved the level: levels only
        # change there, so this is the unit's level over time (the ``dvfs_levels`` table)
        self.changes: list[tuple[float, int]] = [(0.0, self.level)]
        levels = range(self.table.top + 1)
        #: per level: how many times longer compute-bound work takes than at the top
        self.scale = tuple(self.table.time_scale(level) for level in levels)
        #: per level: the unit's power while busy (W, whole unit)
        self.busy_w = tuple(self.table.active_power_w(level) for level in levels)

    def op_costs(
        self, fixed_s: float, compute_s: float, memory_s: float, core_share: float
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """An op's time (s) and energy (J) at every level, from its time parts at the top
        (s) and the share of the unit it holds.

        Raises
        ------
        SocsimError
            Unless the parts are finite and >= 0.
        """
        self.table.op_time_at_level_s(compute_s, memory_s, fixed_s, self.table.top)
        times_s = tuple(fixed_s + max(compute_s * scale, memory_s) for scale in self.scale)
        pairs = zip(self.busy_w, times_s, strict=True)
        energies_j = tuple(busy_w * core_share * time_s for busy_w, time_s in pairs)
        return times_s, energies_j

    def start(self, now: float, times_s: tuple[float, ...]) -> int:
        """An op starts now: returns the level the governor chose for it, and notes it
        running for its time at that level. ``times_s``: its time at each level (s), from
        :meth:`op_costs`.

        The governor sees the unit's busy fraction (0..1) over its window just before
        ``now`` (windowed governors), or whether an op ran at all (the others).
        """
        busy = self._busy
        if busy is None:
            utilisation = 1.0 if self._ran else 0.0
        else:
            utilisation = busy.busy_s(now) / self._capacity_s
            if utilisation > 1.0:
                utilisation = 1.0
        current = self.level
        keeps = self._keeps
        span = keeps[current] if keeps is not None and self.cap is None else None
        if span is not None and span[0] <= utilisation <= span[1]:
            level = current  # what the rule answers there (monotone), without asking it
        else:
            level = self._rule(utilisation, current, self.cap)
            if level != current:
                level = self._move_to(level, now)
            elif keeps is not None and self.cap is None:
                kept = self._kept[current] = self._kept[current] + 1
                if kept >= SPAN_AFTER:
                    keeps[current] = self._keeps_span(utilisation, current)
        self._ran = True
        if busy is not None:
            busy.record(now, now + times_s[level])
        return level

    def _keeps_span(self, utilisation: float, current: int) -> tuple[float, float]:
        """The utilisations (low, high) in [0, 1] around ``utilisation``, where the rule
        keeps ``current`` unthrottled, for which it keeps it: the rule is monotone, so
        that is an interval, and each end is found by asking the rule (bisection,
        :data:`SPAN_STEPS`; the span found is inside the true one)."""
        rule = self._rule

        def keeps(u: float) -> bool:
            return rule(u, current, None) == current

        return _last_kept(keeps, utilisation, 0.0), _last_kept(keeps, utilisation, 1.0)

    def _move_to(self, level: int, now: float) -> int:
        """The governor moved the level at ``now``: returns it, checked."""
        # a level of the table (a governor registered without a rule is trusted less)
        level = self.table.check_level(level)
        changes = self.changes
        if changes[-1][0] == now:  # two ops started at this instant: the last one holds
            changes.pop()
        if not changes or changes[-1][1] != level:
            changes.append((now, level))
        self.level = level
        return level


def _last_kept(keeps: Callable[[float], bool], inside: float, end: float) -> float:
    """The point nearest ``end`` found where ``keeps`` holds, from ``inside`` (where it
    holds) towards ``end``: ``end`` itself if it holds there, else by :data:`SPAN_STEPS`
    bisections (``keeps`` holds on an interval)."""
    if keeps(end):
        return end
    for _ in range(SPAN_STEPS):
        middle = (inside + end) / 2
        if keeps(middle):
            inside = middle
        else:
            end = middle
    return inside


def constant_level(unit: ComputeUnit) -> int | None:
    """The level ``unit``'s governor picks whatever the unit's history, else None.

    True of a governor without a sampling window that answers the same for every
    current level and for both utilisations it can see (0 before the unit's first op, 1
    after), unthrottled: ``performance`` (the top), ``powersave`` (0), ``fixed``. Asked
    of the governor's own rule, so a new governor is classified without a list.
    None also for a unit without a DVFS table.
    """
    table = unit.dvfs
    if table is None:
        return None
    state = DvfsState(unit)
    if state.window_s > 0:
        return None
    rule = state._rule
    answers = {rule(u, current, None) for u in (0.0, 1.0) for current in range(table.top + 1)}
    return answers.pop() if len(answers) == 1 else None
