"""The work already committed to each unit: what an adaptive app sees of the load.

:class:`LoadTracker` gives, on demand, per unit the busy seconds still ahead of it:

* the rest of the op each of its workers runs (start + duration - now);
* the ops queued on it, ready and not started (``Server.backlog_s``);
* the ops placed on it by requests in flight that are not ready yet (their inputs
  are still on the way): the queue *behind* the ready ops, which a request arriving
  now also waits for under first-come-first-served unit scheduling. An op of an app
  with a run-time policy (met, eft, etf...) has no unit until it is ready, so it
  counts nowhere before then.

Durations are the plan's (the op's time on an idle unit at its plan level). The
tracker exists only when an app uses a predictive dispatcher: it costs one list append
per request and nothing per op (the engine's hot path is unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping

from simulator.engine.book import RequestBook
from simulator.engine.servers import UnitServer


class LoadTracker:
    """Requests in flight and the units' remaining work (s), read when a decision needs it.

    Parameters
    ----------
    book : RequestBook
        Where each request's current attempt is (a fallback replaces it).
    units : mapping of unit id -> UnitServer
    """

    __slots__ = ("book", "rids", "units")

    def __init__(self, book: RequestBook, units: Mapping[str, UnitServer]):
        self.book = book
        self.units = units
        self.rids: list[int] = []  # issued, possibly in flight (pruned when read)

    def add(self, rid: int) -> None:
        """Request ``rid`` was issued."""
        self.rids.append(rid)

    def remaining_s(self, now_s: float) -> dict[str, float]:
        """Unit id -> busy seconds committed to it at ``now_s`` (see the module doc)."""
        remaining = {}
        for uid, server in self.units.items():
            running_s = 0.0
            for worker in server._workers:
                if worker.payload is not None:
                    running_s += max(0.0, worker.start_s + worker.duration_s - now_s)
            remaining[uid] = server.backlog_s + running_s
        live = []
        book = self.book
        for rid in self.rids:
            request = book.get(rid)
            if request is None or request.finish_s is not None or request.drop_reason:
                continue  # over (an abandoned attempt is no longer the book's)
            live.append(rid)
            steps = request.steps
            for i, left in enumerate(request.waits):
                if left > 0:  # not ready: its inputs are on the way
                    step = steps[i]
                    # None: a run-time app's op, whose unit is decided only when it is
                    # ready (simulator.engine.runtime): it commits no unit yet
                    if step is not None:
                        remaining[step.uid] += step.duration_s
        self.rids = live
        return remaining
