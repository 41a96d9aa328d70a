"""A unit's DVFS state: the governor is asked at every op start (pure, no SimPy).

The engine keeps one per DVFS unit during a run; the list-schedule estimate replays a
fresh one over a lone request's op starts, so both pick levels with the same code (the
governor prepared once as a rule, :func:`~simulator.hardware.governors.governor_rule`).

The utilisation a governor sees is the unit's busy fraction over the governor's window
just before the op starts (ops already scheduled to run into the future count up to
now), so decisions need no periodic timer. A level holds for the whole op.

The busy time is kept exactly (:mod:`simulator.hardware.busy_window`) and rounded to a
float once per decision, in O(1) amortised (``bench/dvfs_window.py``;
docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable

from simulator.hardware.busy_window import BusyWindow, SerialBusyWindow
from simulator.hardware.governors import governor_rule, rule_is_monotone
from simulator.hardware.units import ComputeUnit

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
        # made only for a unit with a table: every caller checks ``unit.dvfs`` first
        assert unit.dvfs is not None
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

    def cut(self, start_s: float, times_s: tuple[float, ...], level: int, now: float) -> None:
        """The op started at ``start_s`` at ``level`` (its times ``times_s``, as given to
        :meth:`start`) was cut short at ``now``: its unit failed (docs/failures.md)."""
        if self._busy is not None:
            self._busy.cut(start_s, start_s + times_s[level], now)

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
