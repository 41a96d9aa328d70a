"""The exact busy time of a unit's op intervals over a sliding window (pure, no SimPy).

What a windowed DVFS governor sees (:class:`~simulator.hardware.dvfs_state.DvfsState`):
the busy time is kept exactly, as integer multiples of a power of two of seconds (every
float is one), and rounded to a float once per decision: it is the correctly rounded
value of the exact busy time, whatever the order the intervals arrived and left in, and
each decision costs O(1) amortised instead of a pass over the window
(``bench/dvfs_window.py``; docs/performance.md).
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heapify, heappop, heappush

from simulator.errors import SimulationError

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

    def cut(self, start_s: float, end_s: float, now: float) -> None:
        """The interval recorded as ``[start_s, end_s]`` ends at ``now`` instead (its op
        was cut short: its unit failed, docs/failures.md); ``now`` is after the last
        query and before ``end_s``."""
        now_exact = self._exact(now)  # first: it may refine the unit
        b = self._exact(end_s)
        running = self._running
        running[running.index((end_s, b))] = (now, now_exact)
        heapify(running)
        self._running_b += now_exact - b
        for j, (a_s, b_s, _, length) in enumerate(self._in_window):
            if a_s == start_s and b_s == end_s:
                self._in_window[j] = (a_s, now, now_exact, length - (b - now_exact))
                self._window_total -= b - now_exact
                return
        straddling = self._straddling  # it began before the window's start
        straddling[straddling.index((end_s, b))] = (now, now_exact)
        heapify(straddling)
        self._straddling_b += now_exact - b


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
        # first: it may refine the unit; ``_exact``'s common case inlined (a call less
        # per op start)
        scaled = end_s * self._scale
        b = int(scaled) if scaled.is_integer() else self._exact(end_s)
        exponent = self._exponent
        # back to back (a busy unit): the previous end's conversion is the start's
        a = self._end_exact if start_s == self._end else self._exact(start_s)
        if self._exponent != exponent:  # converting the start refined the unit
            b = self._exact(end_s)
        self._in_window.append((start_s, end_s, a, self._total))
        self._total += b - a
        self._end = end_s
        self._end_exact = b

    def cut(self, start_s: float, end_s: float, now: float) -> None:
        """The last interval, ``[start_s, end_s]``, ends at ``now`` instead (its op was
        cut short: its unit failed)."""
        now_exact = self._exact(now)  # first: it may refine the unit
        a_s, b_s, a, before = self._in_window[-1]
        if (a_s, b_s) != (start_s, end_s):
            raise SimulationError(f"busy window: [{start_s!r}, {end_s!r}] is not the last")
        self._in_window[-1] = (a_s, now, a, before)
        self._total -= self._end_exact - now_exact
        self._end = now
        self._end_exact = now_exact

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
        inverse = self._inverse  # ``_seconds(busy)`` inlined: a call less per decision
        return busy * inverse if inverse else busy / self._unit
