"""Servers: compute units and link directions that serve one job at a time.

A server is one SimPy process that sleeps on an event while its queue is empty and
otherwise serves the job with the smallest key. Jobs are plain tuples, not processes,
so an op costs one timeout event instead of a process with request/release events
(see ``docs/design.md``: this replaces a ``simpy.Resource`` per unit).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any

import simpy

#: A job: (duration_s, on_start(payload, t), on_finish(payload, start_s, end_s), payload).
#: ``on_start`` may return a duration that replaces ``duration_s`` (decided at start), or
#: a :class:`~simulator.engine.dram.Stream` when the op shares its node's DRAM (it then
#: lasts at least the stream's uncontended duration, longer while DRAM is contended).
Job = tuple[float, Callable[[Any, float], None] | None, Callable[[Any, float, float], None], Any]


class Server:
    """Serves jobs, smallest key first, with ``workers`` jobs in service at once.

    Parameters
    ----------
    env : simpy.Environment
    name : str
    workers : int
        Jobs served concurrently (1 for a GPU or a link direction; ``cores //
        cores_per_op`` for a CPU cluster whose ops use part of its cores).

    Notes
    -----
    Keys must be unique and totally ordered so the schedule is deterministic. Each
    worker is one SimPy process; idle workers sleep on an event and are woken in the
    order they went idle. ``busy_s`` accumulates service time exactly (sum of the
    durations served, over all workers); ``backlog_s`` is the work queued, not started.
    """

    __slots__ = ("_idle", "_queue", "backlog_s", "busy_s", "env", "jobs_served", "name", "workers")

    def __init__(self, env: simpy.Environment, name: str, workers: int = 1):
        self.env = env
        self.name = name
        self.workers = workers
        self._queue: list[tuple[Any, Job]] = []
        self._idle: list[simpy.Event] = []
        self.busy_s = 0.0
        self.backlog_s = 0.0
        self.jobs_served = 0
        for _ in range(workers):
            env.process(self._serve())

    def submit(self, key: Any, job: Job) -> None:
        """Queue ``job``; wakes an idle worker if there is one."""
        heappush(self._queue, (key, job))
        self.backlog_s += job[0]
        if self._idle:
            self._idle.pop(0).succeed()

    def cancel(self, predicate: Callable[[Any], bool]) -> int:
        """Drop the queued (not started) jobs whose payload satisfies ``predicate``.

        Returns how many were dropped. Jobs in service are not preempted.
        """
        kept, dropped = [], []
        for item in self._queue:
            (dropped if predicate(item[1][3]) else kept).append(item)
        if dropped:
            for _, job in dropped:
                self.backlog_s -= job[0]
            self._queue[:] = kept  # in place: the workers hold this list
            heapify(self._queue)
        return len(dropped)

    def _serve(self):
        env = self.env
        queue = self._queue
        while True:
            if not queue:
                wake = env.event()
                self._idle.append(wake)
                yield wake
                if not queue:  # another worker took the job first
                    continue
            _, (duration_s, on_start, on_finish, payload) = heappop(queue)
            self.backlog_s -= duration_s
            start_s = env.now
            stream = None
            if on_start is not None:
                decided = on_start(payload, start_s)
                if decided is not None:
                    if isinstance(decided, float):  # the unit set its speed now (DVFS)
                        duration_s = decided
                    else:  # the op shares the node's DRAM: a Stream (engine/dram.py)
                        stream = decided
                        duration_s = stream.duration_s
            if duration_s > 0:
                yield env.timeout(duration_s)  # an op never runs faster than alone
            if stream is not None:
                stalled = stream.channel.end(stream, env.now)
                if stalled is not None:  # slowed by other ops pulling DRAM: not done yet
                    yield stalled
                    duration_s = env.now - start_s
            self.busy_s += duration_s
            self.jobs_served += 1
            on_finish(payload, start_s, env.now)


def call_later(env: simpy.Environment, delay_s: float, callback: Callable[[], None]) -> None:
    """Run ``callback`` after ``delay_s`` (at once when the delay is zero), no process."""
    if delay_s <= 0:
        callback()
        return
    env.timeout(delay_s).callbacks.append(lambda _event: callback())


class Alarm:
    """One pending wake-up that re-setting replaces (an older one no longer fires).

    SimPy timeouts cannot be cancelled; a version number makes every wake-up but the
    latest a no-op, which is what channels, radios, batteries and thermal nodes need
    when what they wait for moves.
    """

    __slots__ = ("_version", "env")

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._version = 0

    def set(self, delay_s: float, callback: Callable[[], None]) -> None:
        """Call ``callback`` after ``delay_s`` unless the alarm is set or cleared again."""
        self._version += 1
        version = self._version
        self.env.timeout(max(delay_s, 0.0)).callbacks.append(
            lambda _event: callback() if version == self._version else None
        )

    def clear(self) -> None:
        self._version += 1
