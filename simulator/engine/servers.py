"""Servers: compute units and link directions that serve one job at a time.

A server is one SimPy process that sleeps on an event while its queue is empty and
otherwise serves the job with the smallest key. Jobs are plain tuples, not processes,
so an op costs one timeout event instead of a process with request/release events
(see ``docs/design.md``: this replaces a ``simpy.Resource`` per unit).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

import simpy

#: A job: (duration_s, on_start(payload, t), on_finish(payload, start_s, end_s), payload).
Job = tuple[float, Callable[[Any, float], None] | None, Callable[[Any, float, float], None], Any]


class Server:
    """Serves jobs one at a time, smallest key first, work-conserving.

    Parameters
    ----------
    env : simpy.Environment
    name : str

    Notes
    -----
    Keys must be unique and totally ordered so the schedule is deterministic.
    ``busy_s`` accumulates service time exactly (sum of job durations served).
    """

    __slots__ = ("_queue", "_wake", "busy_s", "env", "jobs_served", "name")

    def __init__(self, env: simpy.Environment, name: str):
        self.env = env
        self.name = name
        self._queue: list[tuple[Any, Job]] = []
        self._wake: simpy.Event | None = None
        self.busy_s = 0.0
        self.jobs_served = 0
        env.process(self._serve())

    def submit(self, key: Any, job: Job) -> None:
        """Queue ``job``; wakes the server if it is idle."""
        heappush(self._queue, (key, job))
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.succeed()

    @property
    def queue_length(self) -> int:
        return len(self._queue)

    def _serve(self):
        env = self.env
        queue = self._queue
        while True:
            if not queue:
                self._wake = env.event()
                yield self._wake
            _, (duration_s, on_start, on_finish, payload) = heappop(queue)
            start_s = env.now
            if on_start is not None:
                on_start(payload, start_s)
            if duration_s > 0:
                yield env.timeout(duration_s)
            self.busy_s += duration_s
            self.jobs_served += 1
            on_finish(payload, start_s, env.now)


def call_later(env: simpy.Environment, delay_s: float, callback: Callable[[], None]) -> None:
    """Run ``callback`` after ``delay_s`` (at once when the delay is zero), no process."""
    if delay_s <= 0:
        callback()
        return
    env.timeout(delay_s).callbacks.append(lambda _event: callback())
