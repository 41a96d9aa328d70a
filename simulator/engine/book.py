"""The engine's book of requests: the records in flight, and what the summary needs.

Every level keeps the compact figures the summary is computed from (8 bytes per request
for its latency, plus a few counters). ``trace="full"`` and ``"summary"`` also keep every
:class:`~simulator.engine.state.Request` record for the ``requests`` table;
``trace="none"`` releases a record when its request completes or is dropped, so memory
does not grow with the number of requests beyond the latency array.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator

import numpy as np

from simulator.engine.state import Request
from simulator.results.run_result import RequestFigures


class RequestBook:
    """Requests by id: the attempt under way (a fallback replaces it), and their figures.

    Parameters
    ----------
    keep_records : bool
        Keep every record until the end (for the ``requests`` table); false: only the
        records of requests in flight.
    """

    def __init__(self, keep_records: bool):
        self.keep_records = keep_records
        self._records: list[Request] = []  # by id, kept to the end (keep_records)
        self._live: dict[int, Request] = {}  # by id, in flight only (not keep_records)
        # latency (s) by request id, NaN until it completes: id order is the ``requests``
        # table's, so the summary's mean sums in the same order at every trace level
        self._latency_s = array("d")
        # app of each request by id, as a code into app_names (the fleets table's groups)
        self._app_codes = array("l")
        self._codes: dict[str, int] = {}
        self.first_arrival_s = math.inf
        self.last_finish_s = -math.inf
        self.completed = 0
        self.with_deadline = 0  # completed requests whose app has a deadline
        self.deadline_met = 0

    # not iterable: say which records, records() or current() (iterating by index would
    # walk ids 0, 1, ... and fail on the first one released)
    __iter__ = None

    @property
    def issued(self) -> int:
        """How many requests were issued (the next request's id)."""
        return len(self._latency_s)

    def add(self, request: Request) -> None:
        """A new request (its id must be :attr:`issued`)."""
        if request.rid != self.issued:
            raise ValueError(f"request id {request.rid}, expected {self.issued}")
        self._latency_s.append(math.nan)
        app = request.app.entry.app
        code = self._codes.get(app)
        if code is None:
            code = self._codes[app] = len(self._codes)
        self._app_codes.append(code)
        self.first_arrival_s = min(self.first_arrival_s, request.arrival_s)
        if self.keep_records:
            self._records.append(request)
        else:
            self._live[request.rid] = request

    def __getitem__(self, rid: int) -> Request:
        return self._records[rid] if self.keep_records else self._live[rid]

    def __setitem__(self, rid: int, request: Request) -> None:
        """Replace request ``rid``'s attempt (a fallback restarts it)."""
        if self.keep_records:
            self._records[rid] = request
        else:
            self._live[rid] = request

    def get(self, rid: int) -> Request | None:
        """Request ``rid``'s current attempt, or None once it is released (``none``)."""
        if self.keep_records:
            return self._records[rid]
        return self._live.get(rid)

    def complete(self, request: Request, now: float) -> None:
        """``request`` completed at ``now``: book its latency and deadline."""
        request.finish_s = now
        latency_s = now - request.arrival_s
        self._latency_s[request.rid] = latency_s
        self.completed += 1
        if now > self.last_finish_s:
            self.last_finish_s = now
        deadline_s = request.app.entry.deadline_s
        if deadline_s is not None:
            self.with_deadline += 1
            self.deadline_met += latency_s <= deadline_s
        self._release(request)

    def drop(self, request: Request, reason: str) -> None:
        """``request`` was given up with ``reason``."""
        request.drop_reason = reason
        self._release(request)

    def _release(self, request: Request) -> None:
        if not self.keep_records:
            del self._live[request.rid]

    def records(self) -> list[Request]:
        """Every request's record by id (kept records only; empty under ``none``)."""
        return self._records

    def current(self) -> Iterator[Request]:
        """The records the book still holds (all, or those in flight)."""
        return iter(self._records if self.keep_records else self._live.values())

    def by_app(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(app names, per request id its app's code in them, per request id its
        latency in s, NaN unless it completed): at every trace level."""
        codes = np.frombuffer(self._app_codes, dtype=np.int64) if self.issued else np.empty(0)
        latency = np.frombuffer(self._latency_s, dtype=np.float64) if self.issued else np.empty(0)
        return list(self._codes), codes.astype(np.int64), latency.copy()

    def figures(self) -> RequestFigures:
        """What the summary needs, in the ``requests`` table's order."""
        latency_s = np.frombuffer(self._latency_s, dtype=np.float64) if self.issued else None
        done_s = latency_s[~np.isnan(latency_s)] if latency_s is not None else np.empty(0)
        return RequestFigures(
            issued=self.issued,
            latency_s=done_s,
            first_arrival_s=float(self.first_arrival_s) if self.issued else math.nan,
            last_finish_s=float(self.last_finish_s) if self.completed else math.nan,
            with_deadline=self.with_deadline,
            deadline_met=self.deadline_met,
        )
