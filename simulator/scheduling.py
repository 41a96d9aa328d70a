"""Pure decision rules the engine consults at run time (registries, no SimPy).

* **Unit schedulers** pick which ready op a free unit runs next (Band-style multi-DNN
  scheduling). Each is a key function; the unit serves the smallest key. Keys end with
  the request id and op position, so they are unique and the schedule deterministic.
  Ops are not preempted.
* **Dispatchers** pick which replica (placement) of an app a new request goes to
  (load balancing across units, replicas or nodes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simulator.registry import Registry
from simulator.schema import Record

#: key(rid, op_position, priority, deadline_at_s, ready_s) -> sortable tuple
UnitScheduler = Callable[[int, int, int, float, float], tuple]

SCHEDULERS: Registry[UnitScheduler] = Registry("unit scheduler")
_NO_OPTIONS = Record({}, name="scheduler options")


@SCHEDULERS.register("fcfs", _NO_OPTIONS)
def fcfs(rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float) -> tuple:
    """Earliest-arrived request first, then placement order (the default)."""
    return (rid, position)


@SCHEDULERS.register("ready_order", _NO_OPTIONS)
def ready_order(
    rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float
) -> tuple:
    """The op that became ready first (first come, first served at the unit)."""
    return (ready_s, rid, position)


@SCHEDULERS.register("priority", _NO_OPTIONS)
def priority_first(
    rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float
) -> tuple:
    """Highest app priority first, then earliest-arrived request."""
    return (-priority, rid, position)


@SCHEDULERS.register("edf", _NO_OPTIONS)
def earliest_deadline(
    rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float
) -> tuple:
    """Earliest absolute deadline first (requests without one last), then arrival."""
    return (deadline_at_s, rid, position)


@dataclass(frozen=True)
class ReplicaLoad:
    """What a dispatcher sees of one replica when a request arrives.

    Attributes
    ----------
    in_flight : int
        This app's requests dispatched to the replica and not yet complete.
    backlog_s : float
        Work (s) queued on the replica's units, from every app, not yet started.
    """

    in_flight: int
    backlog_s: float


#: dispatch(loads, turn, rng) -> replica index
Dispatcher = Callable[[Sequence[ReplicaLoad], int, np.random.Generator], int]

DISPATCHERS: Registry[Dispatcher] = Registry("dispatcher")


def _argmin(values: Sequence[float]) -> int:
    best = 0
    for i, value in enumerate(values):
        if value < values[best]:
            best = i
    return best


@DISPATCHERS.register("round_robin", _NO_OPTIONS)
def round_robin(loads: Sequence[ReplicaLoad], turn: int, rng: np.random.Generator) -> int:
    """Replicas in turn."""
    return turn % len(loads)


@DISPATCHERS.register("jsq", _NO_OPTIONS)
def join_shortest_queue(loads: Sequence[ReplicaLoad], turn: int, rng: np.random.Generator) -> int:
    """Join the shortest queue: fewest requests in flight (ties: first replica)."""
    return _argmin([load.in_flight for load in loads])


@DISPATCHERS.register("least_loaded", _NO_OPTIONS)
def least_loaded(loads: Sequence[ReplicaLoad], turn: int, rng: np.random.Generator) -> int:
    """Least queued work on the replica's units (all apps), then fewest in flight."""
    return _argmin([load.backlog_s + load.in_flight * 1e-12 for load in loads])


@DISPATCHERS.register("power_of_two", _NO_OPTIONS)
def power_of_two(loads: Sequence[ReplicaLoad], turn: int, rng: np.random.Generator) -> int:
    """Two replicas drawn at random; the one with fewer in flight (Mitzenmacher)."""
    if len(loads) == 1:
        return 0
    a, b = (int(x) for x in rng.choice(len(loads), size=2, replace=False))
    return b if loads[b].in_flight < loads[a].in_flight else a


NO_DEADLINE = math.inf
