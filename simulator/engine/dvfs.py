"""A unit's DVFS state during a run: the governor is asked at every op start.

The utilisation a governor sees is the unit's busy fraction over the governor's window
just before the op starts (ops already scheduled to run into the future count up to
now), so decisions need no periodic timer. A level holds for the whole op.
"""

from __future__ import annotations

from collections import deque

from simulator.hardware.governors import GOVERNORS, GovernorInput
from simulator.hardware.units import ComputeUnit


class DvfsState:
    """Level and recent busy intervals of one DVFS unit."""

    __slots__ = (
        "_recent",
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
        self._recent: deque[tuple[float, float]] = deque()
        # (time, level) at t = 0 and at every op start that moved the level: levels only
        # change there, so this is the unit's level over time (the ``dvfs_levels`` table)
        self.changes: list[tuple[float, int]] = [(0.0, self.level)]

    def decide(self, now: float) -> int:
        """The level for an op starting now."""
        if self.window_s > 0:
            start = now - self.window_s
            while self._recent and self._recent[0][1] <= start:
                self._recent.popleft()
            # a plain loop, not sum() over a generator with min/max calls: this runs at every
            # op start and dominated the engine's time (docs/performance.md); the
            # additions happen in the same order, so the float result is the same
            busy = 0.0
            for a, b in self._recent:
                high = b if b < now else now
                low = a if a > start else start
                if high > low:
                    busy += high - low
            utilisation = min(busy / (self.window_s * self.slots), 1.0)
        else:
            utilisation = 1.0 if self._recent else 0.0
        level = self.function(
            self.table, GovernorInput(utilisation, self.level, self.cap), self.options
        )
        if level != self.level:
            changes = self.changes
            if changes[-1][0] == now:  # two ops started at this instant: the last one holds
                changes.pop()
            if not changes or changes[-1][1] != level:
                changes.append((now, level))
            self.level = level
        return level

    def record(self, start_s: float, end_s: float) -> None:
        self._recent.append((start_s, end_s))
        if self.window_s <= 0 and len(self._recent) > 1:
            self._recent.popleft()
