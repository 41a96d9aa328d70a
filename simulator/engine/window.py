"""A fixed energy window (``energy_window: {start_s, end_s}``; docs/requests.md).

One job: count each unit's busy time and active energy inside a fixed interval, and the
requests completed in it, as ops and requests end (the trace may keep no rows, so this
cannot wait for the tables). An op's power is constant while it runs, so its energy
inside the window is its energy times the share of its interval the window holds.
Radios keep every constant-power interval already and are clipped when the tables are
built; idle power fills the rest of the window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from simulator.engine.book import RequestBook
from simulator.engine.ledger import Ledger
from simulator.engine.servers import UnitServer
from simulator.engine.tally import UnitTally
from simulator.platform import Platform
from simulator.results.run_result import RequestFigures

if TYPE_CHECKING:
    from simulator.engine.state import OpStep, Request


class WindowLedger(Ledger):
    """A :class:`~simulator.engine.ledger.Ledger` whose unit energy covers exactly
    ``window`` = (start s, end s), ops clipped to it."""

    def __init__(
        self,
        platform: Platform,
        units: dict[str, UnitServer],
        keep_rows: bool,
        window: tuple[float, float],
        new_tally: Callable[[str], UnitTally] | None = None,
    ):
        super().__init__(platform, units, keep_rows, new_tally)
        self.window = window
        #: unit id -> [busy whole-unit s, active J] inside the window
        self._inside = {uid: [0.0, 0.0] for uid in units}

    def op(
        self,
        step: OpStep,
        request: Request,
        i: int,
        start_s: float,
        end_s: float,
        energy_j: float,
        level: int,
        stall_s: float,
    ) -> None:
        super().op(step, request, i, start_s, end_s, energy_j, level, stall_s)
        self._clip(step.uid, start_s, end_s, step.core_share, energy_j)

    def partial_op(
        self, uid: str, start_s: float, end_s: float, core_share: float, busy_w: float
    ) -> None:
        super().partial_op(uid, start_s, end_s, core_share, busy_w)
        self._clip(uid, start_s, end_s, core_share, busy_w * (end_s - start_s) * core_share)

    def _clip(
        self, uid: str, start_s: float, end_s: float, core_share: float, energy_j: float
    ) -> None:
        w0, w1 = self.window
        inside_s = min(end_s, w1) - max(start_s, w0)
        if inside_s <= 0:
            return
        totals = self._inside[uid]
        totals[0] += inside_s * core_share
        # the whole op inside: its own energy, not a product that may round differently
        totals[1] += (
            energy_j if inside_s == end_s - start_s else energy_j * inside_s / (end_s - start_s)
        )

    def in_window(self, uid: str, busy_s: float, tally: UnitTally) -> tuple[float, float]:
        busy_in_window, active_j = self._inside[uid]
        return busy_in_window, active_j


class WindowBook(RequestBook):
    """A :class:`~simulator.engine.book.RequestBook` that also counts the requests
    completed inside ``window`` = (start s, end s): the per-inference energy figures
    divide the window's energy by them."""

    def __init__(self, keep_records: bool, window: tuple[float, float]):
        super().__init__(keep_records)
        self.window = window
        self.completed_in_window = 0

    def complete(self, request: Request, now: float) -> None:
        super().complete(request, now)
        if self.window[0] <= now <= self.window[1]:
            self.completed_in_window += 1

    def figures(self) -> RequestFigures:
        return replace(super().figures(), completed_in_window=self.completed_in_window)
