"""A compute unit run as a pool of cores: each op takes the cores it asks for.

Used only for the units some placement runs as a core pool (per-op ``cores``,
docs/cost-model.md "Per-op cores"); every other unit is a
:class:`~simulator.engine.servers.Server`, whose hot path this class leaves alone.

Rule: queued ops start smallest key first, each when as many of the unit's cores as it
takes are free; the op with the smallest key is never overtaken (while it waits for
cores, a later op that would fit waits too), so an op's wait is bounded by the ops
before it and the order of starts is the scheduler's. An op holds its cores from its
start to its end, so the cores in use never exceed the unit's.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any

import numpy as np
import simpy

from simulator.engine.clock import Wakeup, after, wake
from simulator.engine.servers import (
    PARKED,
    OnFinish,
    OnStart,
    requeue,
    split_jobs,
    unbound_callback,
)


class PoolServer:
    """Serves jobs on a pool of ``cores`` cores, smallest key first, never overtaking.

    Parameters
    ----------
    env : simpy.Environment
    name : str
    cores : int
        The unit's cores.
    cores_of : callable
        ``cores_of(payload)`` -> the cores the job takes (1 to ``cores``).
    busy_unit_cores : int
        ``busy_s`` counts each job's time x its cores / ``busy_unit_cores`` (the unit's
        ``cores_per_op``), so that the ledger's whole-unit busy time
        (``busy_s x cores_per_op / cores``) is each job's time x its share of the cores.

    Attributes
    ----------
    in_use : int
        Cores held by the jobs in service now.
    peak_in_use : int
        The most cores held at once.
    """

    __slots__ = (
        "_kick",
        "_kicked",
        "_queue",
        "_running",
        "backlog_s",
        "busy_s",
        "busy_unit_cores",
        "cores",
        "cores_of",
        "env",
        "in_use",
        "jobs_served",
        "name",
        "on_finish",
        "on_start",
        "parked",
        "peak_in_use",
    )

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        cores: int,
        cores_of: Callable[[Any], int],
        busy_unit_cores: int | None = None,
    ):
        self.env = env
        self.name = name
        self.cores = cores
        self.cores_of = cores_of
        self.busy_unit_cores = busy_unit_cores or cores
        self._queue: list[tuple[Any, float, Any]] = []  # heap of (key, duration_s, payload)
        self._running: list[_Job] = []
        self._kicked = False
        self._kick = self.kicked
        self.in_use = 0
        self.peak_in_use = 0
        self.busy_s = 0.0
        self.backlog_s = 0.0
        self.jobs_served = 0
        self.on_start: OnStart = unbound_callback
        self.on_finish: OnFinish = unbound_callback
        self.parked: list[tuple[Any, float, Any]] = []  # jobs whose start said PARKED

    @property
    def _workers(self) -> tuple[_Job, ...]:
        """The jobs in service (what :class:`~simulator.engine.load.LoadTracker` reads)."""
        return tuple(self._running)

    def serve_with(self, on_start: OnStart, on_finish: OnFinish) -> None:
        """Start and end every job through these callbacks (before the first job)."""
        self.on_start = on_start
        self.on_finish = on_finish

    def submit(self, key: Any, duration_s: float, payload: Any) -> None:
        """Queue a job; it starts at its turn in the schedule, as a server's would."""
        heappush(self._queue, (key, duration_s, payload))
        self.backlog_s += duration_s
        if not self._kicked and self.in_use < self.cores:
            self._kicked = True
            after(self.env, 0, self._kick)  # int 0: at t = 0 the clock stays an int

    def cancel(self, predicate: Callable[[Any], bool]) -> int:
        """Drop the queued (not started) jobs whose payload satisfies ``predicate``."""
        kept = [job for job in self._queue if not predicate(job[2])]
        dropped = len(self._queue) - len(kept)
        back, self.parked = split_jobs(self.parked, predicate)
        for job in back:
            self.backlog_s -= job[1]
        dropped += len(back)
        if len(kept) < len(self._queue):
            for job in self._queue:
                if predicate(job[2]):
                    self.backlog_s -= job[1]
            self._queue[:] = kept
            heapify(self._queue)
            self.serve()  # a head that waited for cores may be gone
        return dropped

    def unpark(self, predicate: Callable[[Any], bool]) -> None:
        """Queue again the parked jobs whose payload satisfies ``predicate`` (with their
        keys; they are in ``backlog_s`` already); they start at their turn."""
        back, self.parked = requeue(self.parked, self._queue, predicate)
        if back and not self._kicked and self.in_use < self.cores:
            self._kicked = True
            after(self.env, 0, self._kick)

    def kicked(self, _event) -> None:
        self._kicked = False
        self.serve()

    def serve(self) -> None:
        """Start queued jobs, smallest key first, while the first one's cores are free."""
        queue, env = self._queue, self.env
        while queue:
            cores = self.cores_of(queue[0][2])
            if self.in_use + cores > self.cores:
                return  # the head waits for cores; nothing overtakes it
            key, duration_s, payload = heappop(queue)
            self.backlog_s -= duration_s
            self.in_use += cores
            job = _Job(self, payload, cores, env._now)
            self._running.append(job)
            decided = self.on_start(payload, job.start_s)
            if decided is PARKED:  # its request waits for memory: it holds no cores
                self.in_use -= cores
                self._running.pop()
                self.parked.append((key, duration_s, payload))
                self.backlog_s += duration_s
                continue
            if self.in_use > self.peak_in_use:
                self.peak_in_use = self.in_use
            if decided is not None:
                if isinstance(decided, float):  # the unit set its speed now (DVFS)
                    duration_s = decided
                else:  # the op shares the node's DRAM: a Stream (engine/dram.py)
                    job.stream = decided
                    duration_s = decided.duration_s
            job.duration_s = duration_s
            if duration_s > 0:
                wake(env, duration_s, job, job.on_done)
            else:
                job.ended()

    def finish(self, job: _Job) -> None:
        """``job`` is over: free its cores, count it, tell the dataflow, start the next."""
        self.in_use -= job.cores
        self._running.remove(job)
        self.busy_s += job.duration_s * job.cores / self.busy_unit_cores
        self.jobs_served += 1
        payload, job.payload = job.payload, None
        self.on_finish(payload, job.start_s, self.env._now)
        self.serve()


class _Job(Wakeup):
    """One job in service on a pool: its own wake-up record (its end)."""

    __slots__ = ("cores", "duration_s", "on_done", "payload", "pool", "start_s", "stream")

    def __init__(self, pool: PoolServer, payload: Any, cores: int, start_s: float):
        self.pool = pool
        self.payload = payload
        self.cores = cores
        self.start_s = start_s
        self.duration_s = 0.0
        self.stream = None
        self.on_done: list[Callable[[Any], None]] = [self.done]

    def done(self, _event) -> None:
        """The job's (uncontended) time has passed."""
        self.ended()

    def ended(self) -> None:
        stream = self.stream
        if stream is not None:
            stalled = stream.channel.end(stream, self.pool.env._now)
            if stalled is not None:  # slowed by other ops pulling DRAM: not done yet
                stalled.callbacks.append(self.stalled)
                return
        self.pool.finish(self)

    def stalled(self, _event) -> None:
        """The stalled job's DRAM traffic is done."""
        self.duration_s = self.pool.env._now - self.start_s
        self.pool.finish(self)


def pool_servers(env: simpy.Environment, platform, plans) -> dict[str, PoolServer]:
    """A :class:`PoolServer` for each unit some plan runs as a core pool (none usually).

    ``plans``: app -> plan or tuple of plans. A job of a plan that does not pool the unit
    takes the unit's ``cores_per_op``.
    """
    pooled = sorted(
        {
            uid
            for mine in plans.values()
            for plan in (mine if isinstance(mine, tuple) else (mine,))
            for uid in plan.pool_units
        }
    )
    servers = {}
    for uid in pooled:
        unit = platform.unit(uid)

        def cores_of(payload, default=unit.op_cores) -> int:
            request, i = payload
            op_cores = request.plan.op_cores
            return op_cores[i] if op_cores else default

        servers[uid] = PoolServer(env, uid, unit.cores, cores_of, unit.op_cores)
    return servers


def pooled_share(ops, plans, platform) -> np.ndarray | None:
    """Per row of the ``ops`` table, the op's share of its unit's cores, when some plan
    runs a unit as a core pool; None otherwise (every op has its unit's share)."""
    every = [
        (app, plan)
        for app, mine in plans.items()
        for plan in (mine if isinstance(mine, tuple) else (mine,))
    ]
    if not any(plan.op_cores for _, plan in every):
        return None
    share = {
        (app, op, uid): plan.core_share[i]
        for app, plan in every
        for i, (op, uid) in enumerate(zip(plan.ops, plan.units, strict=True))
    }
    default = {
        uid: platform.unit(uid).op_cores / platform.unit(uid).cores for uid in platform.unit_ids
    }
    return np.array(
        [
            share.get((app, op, uid), default[uid])
            for app, op, uid in zip(ops["app"], ops["op"], ops["unit"], strict=True)
        ],
        dtype=float,
    )
