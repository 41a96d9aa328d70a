"""Servers: compute units and link directions that serve one job at a time.

A server's workers wait on an event while its queue is empty and otherwise serve the
job with the smallest key. Jobs are plain (key, duration, payload) tuples, not
processes, and workers are chains of callbacks, not processes, so an op costs one
timeout event and no generator resume (see ``docs/design.md``: this replaces a
``simpy.Resource`` per unit).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any, Protocol

import simpy
from simpy.events import NORMAL

from simulator.engine.clock import Wakeup, after, wake
from simulator.errors import SimulationError

#: ``on_start(payload, t)``, called when a job starts: may return a duration that replaces
#: the job's (decided at start), or a :class:`~simulator.engine.dram.Stream` when the op
#: shares its node's DRAM (it then lasts at least the stream's uncontended duration,
#: longer while DRAM is contended); None keeps the job's duration; :data:`PARKED`: the
#: job may not start yet.
OnStart = Callable[[Any, float], Any]
#: ``on_finish(payload, start_s, end_s)``, called when a job ends.
OnFinish = Callable[[Any, float, float], None]
#: what ``on_start`` returns for a job that may not start yet (its request waits for
#: room in a node's memory pool, engine/memory.py): the server sets it aside in
#: ``parked`` (still in ``backlog_s``) and serves the next job; :meth:`Server.unpark`
#: queues it again with its key
PARKED: Any = object()


#: a queued job: (scheduler key, duration s, payload)
Job = tuple[Any, float, Any]


def unbound_callback(*_args: Any) -> None:
    """A server's ``on_start`` and ``on_finish`` until :meth:`Server.serve_with` sets them
    (typed as the callbacks, so the workers call them with no None test per op)."""
    raise SimulationError("a server served a job before serve_with set its callbacks")


class InService(Protocol):
    """A server's worker, or a pool's job, as :class:`~simulator.engine.load.LoadTracker`
    reads it: ``payload`` is None while it serves nothing."""

    payload: Any
    start_s: float
    duration_s: float


class UnitServer(Protocol):
    """What the engine asks of a compute unit's server: a :class:`Server`, or a
    :class:`~simulator.engine.pool.PoolServer` for a unit some plan runs as a core pool."""

    name: str
    busy_s: float
    backlog_s: float
    jobs_served: int
    parked: list[Job]
    on_start: OnStart
    on_finish: OnFinish

    def serve_with(self, on_start: OnStart, on_finish: OnFinish) -> None: ...

    def submit(self, key: Any, duration_s: float, payload: Any) -> None: ...

    def cancel(self, predicate: Callable[[Any], bool]) -> int: ...

    def unpark(self, predicate: Callable[[Any], bool]) -> None: ...

    # read-only: a pool builds it from its jobs in service (LoadTracker reads it)
    @property
    def _workers(self) -> tuple[InService, ...]: ...


def split_jobs(jobs: list[Job], predicate: Callable[[Any], bool]) -> tuple[list[Job], list[Job]]:
    """``(taken, kept)``: the ``(key, duration_s, payload)`` jobs whose payload satisfies
    ``predicate``, and the others, each in their order."""
    taken: list[Job] = []
    kept: list[Job] = []
    for job in jobs:
        (taken if predicate(job[2]) else kept).append(job)
    return taken, kept


def requeue(
    parked: list[Job], queue: list[Job], predicate: Callable[[Any], bool]
) -> tuple[list[Job], list[Job]]:
    """Push the ``parked`` jobs whose payload satisfies ``predicate`` back onto the heap
    ``queue`` (with their keys); ``(requeued, still parked)``."""
    back, kept = split_jobs(parked, predicate)
    for job in back:
        heappush(queue, job)
    return back, kept


class Server:
    """Serves jobs, smallest key first, with ``workers`` jobs in service at once.

    Parameters
    ----------
    env : simpy.Environment
    name : str
    workers : int
        Jobs served concurrently (1 for a GPU or a link direction; ``cores //
        cores_per_op`` for a CPU cluster whose ops use part of its cores).

    Every job starts and ends through the same two callbacks, :meth:`serve_with`'s.

    Notes
    -----
    Keys must be unique and totally ordered so the schedule is deterministic. Each
    worker is a chain of callbacks (no SimPy process: a process costs a generator resume
    per event); an idle worker waits on an event and idle workers are woken in the order
    they went idle. ``busy_s`` accumulates service time exactly (sum of the durations
    served, over all workers); ``backlog_s`` is the work queued, not started.
    """

    __slots__ = (
        "_idle",
        "_queue",
        "_workers",
        "backlog_s",
        "busy_s",
        "env",
        "jobs_served",
        "name",
        "on_finish",
        "on_start",
        "parked",
        "workers",
    )

    def __init__(self, env: simpy.Environment, name: str, workers: int = 1):
        self.env = env
        self.name = name
        self.workers = workers
        self._queue: list[tuple[Any, float, Any]] = []  # heap of (key, duration_s, payload)
        self._idle: list[_Worker] = []  # idle workers, longest idle first
        self.busy_s = 0.0
        self.backlog_s = 0.0
        self.jobs_served = 0
        self.on_start: OnStart = unbound_callback
        self.on_finish: OnFinish = unbound_callback
        self.parked: list[tuple[Any, float, Any]] = []  # jobs whose start said PARKED
        # kept only to read what each serves (LoadTracker); the idle list drives them
        self._workers = tuple(_Worker(self) for _ in range(workers))
        for worker in self._workers:
            worker.wait()

    def serve_with(self, on_start: OnStart, on_finish: OnFinish) -> None:
        """Start and end every job through these callbacks (before the first job)."""
        self.on_start = on_start
        self.on_finish = on_finish

    def submit(self, key: Any, duration_s: float, payload: Any) -> None:
        """Queue a job of ``duration_s`` (s, unless its start decides otherwise) that
        carries ``payload`` to the callbacks; wakes an idle worker if there is one."""
        heappush(self._queue, (key, duration_s, payload))
        self.backlog_s += duration_s
        if self._idle:  # the worker idle longest starts it, at its turn in the schedule
            worker = self._idle.pop(0)
            # ``wake(self.env, 0, worker, worker.on_woken)`` inlined (a call less per op):
            # a delay of 0, so the clock keeps its type (an int at t = 0, as ``succeed``)
            worker.callbacks = worker.on_woken
            env = self.env
            heappush(env._queue, (env._now, NORMAL, next(env._eid), worker))  # type: ignore[misc]

    def cancel(self, predicate: Callable[[Any], bool]) -> int:
        """Drop the queued (not started) jobs whose payload satisfies ``predicate``.

        Returns how many were dropped. Jobs in service are not preempted.
        """
        dropped = self._drop(self._queue, predicate)
        if self.parked:  # in the order they were parked (not a heap)
            back, self.parked = split_jobs(self.parked, predicate)
            for _, duration_s, _ in back:
                self.backlog_s -= duration_s
            dropped += len(back)
        return dropped

    def _drop(self, jobs: list[tuple[Any, float, Any]], predicate: Callable[[Any], bool]) -> int:
        """Drop the jobs of the heap ``jobs`` whose payload satisfies ``predicate``."""
        kept: list[tuple[Any, float, Any]] = []
        dropped: list[tuple[Any, float, Any]] = []
        for job in jobs:
            _, _, payload = job
            (dropped if predicate(payload) else kept).append(job)
        if dropped:
            for _, duration_s, _ in dropped:
                self.backlog_s -= duration_s
            jobs[:] = kept  # in place: the workers hold the queue
            heapify(jobs)
        return len(dropped)

    def unpark(self, predicate: Callable[[Any], bool]) -> None:
        """Queue again the parked jobs whose payload satisfies ``predicate`` (with their
        keys; they are in ``backlog_s`` already) and wake idle workers for them."""
        back, self.parked = requeue(self.parked, self._queue, predicate)
        for _ in range(min(len(back), len(self._idle))):
            worker = self._idle.pop(0)
            wake(self.env, 0, worker, worker.on_woken)


class FailingServer(Server):
    """A :class:`Server` whose unit may fail (``failures:``, docs/failures.md): built only
    for such units, so the others' workers never ask whether their unit is down.

    While :attr:`down`, submitted jobs wait in a list of their own, so the workers see
    an empty queue and serve nothing (an idle worker woken for such a job goes idle
    again, as it would on an empty queue); :meth:`recover` hands them to the workers.
    """

    __slots__ = ("_held", "down")

    def __init__(self, env: simpy.Environment, name: str, workers: int = 1):
        super().__init__(env, name, workers)
        self.down = False  # failed: serves nothing until recovered
        self._held: list[tuple[Any, float, Any]] = []  # heap of the jobs submitted while down

    def submit(self, key: Any, duration_s: float, payload: Any) -> None:
        if not self.down:
            super().submit(key, duration_s, payload)
            return
        heappush(self._held, (key, duration_s, payload))
        self.backlog_s += duration_s
        if self._idle:  # woken as when up (the same order of idle workers afterwards)
            worker = self._idle.pop(0)
            wake(self.env, 0, worker, worker.on_woken)

    def cancel(self, predicate: Callable[[Any], bool]) -> int:
        # one of the two is empty: the queue while down, the held jobs while up
        return super().cancel(predicate) + self._drop(self._held, predicate)

    def fail(self) -> list[tuple[Any, float, Any]]:
        """The unit goes down now: its jobs in service are cut, its queue is emptied.

        Returns ``(payload, start_s, DRAM stream or None)`` of each job cut; ``on_finish``
        is never called for them, nor for the queued jobs (their requests are hit too).
        A job submitted while :attr:`down` waits until :meth:`recover`.
        """
        self.down = True
        cut: list[tuple[Any, float, Any]] = []
        workers = []
        for worker in self._workers:
            if worker.payload is None:
                workers.append(worker)
                continue
            cut.append((worker.payload, worker.start_s, worker.stream))
            # its wake-up is on SimPy's queue: emptied, it calls nothing when it fires;
            # a fresh worker takes its place
            worker.callbacks = ()
            worker.payload = worker.stream = None
            fresh = _Worker(self)
            workers.append(fresh)
            fresh.wait()
        self._workers = tuple(workers)
        self._queue.clear()  # in place: the workers hold this list
        self._held.clear()
        self.parked.clear()
        self.backlog_s = 0.0
        return cut

    def recover(self) -> None:
        """The unit is up again: idle workers start what was submitted while it was down."""
        self.down = False
        self._queue.extend(self._held)  # a heap (the queue is empty while down)
        self._held.clear()
        for _ in range(min(len(self._queue), len(self._idle))):
            worker = self._idle.pop(0)
            wake(self.env, 0, worker, worker.on_woken)


class _Worker(Wakeup):
    """One worker of a server: serves a job, then the next, or waits for one.

    A worker waits for one thing at a time (a job, or the end of the one it serves), so
    it is its own wake-up record on SimPy's schedule (:func:`~simulator.engine.clock.wake`):
    an op costs no record beyond its entry in the schedule.
    """

    __slots__ = (
        "_stalled",
        "duration_s",
        "env",
        "on_done",
        "on_woken",
        "payload",
        "queue",
        "server",
        "start_s",
        "stream",
    )

    def __init__(self, server: Server):
        self.server = server
        self.env = server.env
        self.queue = server._queue
        # built once: the callbacks of every wake-up (SimPy's loop only reads them)
        self.on_woken: list[Callable[[Any], None]] = [self.woken]
        self.on_done = [self.done]
        self._stalled = self.stalled
        self.payload = self.stream = None
        self.duration_s = self.start_s = 0.0

    def wait(self) -> None:
        """Wait for a job: the server wakes idle workers in the order they went idle."""
        self.server._idle.append(self)

    def woken(self, _event) -> None:
        if not self.queue:  # another worker took the job first (or the unit is down)
            self.wait()
            return
        self.serve()

    def serve(self) -> None:
        """Serve queued jobs until one takes time or the queue is empty."""
        server, queue, env = self.server, self.queue, self.env
        on_start = server.on_start
        while queue:  # empty while the unit is down (FailingServer holds its jobs apart)
            key, duration_s, payload = heappop(queue)
            server.backlog_s -= duration_s
            self.start_s = start_s = env._now
            stream = None
            decided = on_start(payload, start_s)
            if decided is not None:
                if isinstance(decided, float):  # the unit set its speed now (DVFS)
                    duration_s = decided
                elif decided is PARKED:  # its request waits for memory: serve the next
                    server.parked.append((key, duration_s, payload))
                    server.backlog_s += duration_s
                    continue
                else:  # the op shares the node's DRAM: a Stream (engine/dram.py)
                    stream = decided
                    duration_s = stream.duration_s
            self.duration_s = duration_s
            self.payload = payload
            self.stream = stream
            if duration_s > 0:  # an op never runs faster than alone
                # ``wake(env, duration_s, self, self.on_done)`` inlined: a call less per op
                self.callbacks = self.on_done
                entry = (start_s + duration_s, NORMAL, next(env._eid), self)
                heappush(env._queue, entry)  # type: ignore[misc]  # a record, not an Event
                return
            if not self.ended():
                return
        self.wait()

    def done(self, _event) -> None:
        """The job's (uncontended) time has passed."""
        if self.stream is None:  # the common case: ``finish`` inlined, one call less per op
            server = self.server
            server.busy_s += self.duration_s
            server.jobs_served += 1
            payload, self.payload = self.payload, None
            server.on_finish(payload, self.start_s, self.env._now)
            if self.queue:
                self.serve()
            else:  # idle: ``wait`` without its call
                server._idle.append(self)
        elif self.ended():
            self.serve()

    def ended(self) -> bool:
        """Finish the job in service unless its DRAM traffic still runs (then wait for it).
        Returns whether the worker is free."""
        stream = self.stream
        if stream is not None:
            stalled = stream.channel.end(stream, self.env._now)
            if stalled is not None:  # slowed by other ops pulling DRAM: not done yet
                stalled.callbacks.append(self._stalled)
                return False
        self.finish()
        return True

    def stalled(self, _event) -> None:
        """The stalled job's DRAM traffic is done."""
        self.duration_s = self.env._now - self.start_s
        self.finish()
        self.serve()

    def finish(self) -> None:
        server = self.server
        server.busy_s += self.duration_s
        server.jobs_served += 1
        payload, self.payload = self.payload, None
        self.stream = None
        server.on_finish(payload, self.start_s, self.env._now)


def call_later(env: simpy.Environment, delay_s: float, callback: Callable[[], None]) -> None:
    """Run ``callback`` after ``delay_s`` (at once when the delay is zero), no process."""
    if delay_s <= 0:
        callback()
        return
    after(env, delay_s, lambda _event: callback())


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
        after(
            self.env,
            max(delay_s, 0.0),
            lambda _event: callback() if version == self._version else None,
        )

    def clear(self) -> None:
        self._version += 1
