"""Pure decision rules the engine consults at run time (registries, no SimPy).

* **Unit schedulers** pick which ready op a free unit runs next (Band-style multi-DNN
  scheduling). Each is a key function; the unit serves the smallest key. Keys end with
  the request id and op position, so they are unique and the schedule deterministic.
  Ops are not preempted.
* **Dispatchers** pick which replica (placement) of an app a new request goes to
  (load balancing across units, replicas or nodes). ``adaptive`` treats the replicas as
  offloading candidates and picks the best predicted under the conditions observed at
  run time (see :class:`AdaptiveOptions` and ``docs/adaptive.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from simulator.errors import SocsimError
from simulator.registry import Registry
from simulator.schema import Record

#: key(rid, op_position, priority, deadline_at_s, ready_s) -> sortable tuple
UnitScheduler = Callable[[int, int, int, float, float], tuple]
#: request_part(rid, priority, deadline_at_s) -> the part of the key every op of a request
#: shares (:func:`by_request`)
RequestPart = Callable[[int, int, float], tuple]

SCHEDULERS: Registry[UnitScheduler] = Registry("unit scheduler", "socsim.schedulers")
_NO_OPTIONS = Record({}, name="scheduler options")


def by_request(request_part: RequestPart) -> UnitScheduler:
    """The unit scheduler whose key is ``request_part(rid, priority, deadline_at_s)``
    followed by the op's position: an order of requests, then placement order.

    The key function keeps ``request_part`` as its attribute of that name, so the engine
    computes a request's part once, when the request starts, and each op's key as
    ``part + (position,)`` without a call per op (the ``(position,)`` built once per op of
    a plan) (a scheduler that reads ``ready_s``
    cannot be written this way and is called per op).
    """

    def key(rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float) -> tuple:
        return (*request_part(rid, priority, deadline_at_s), position)

    key.__name__ = key.__qualname__ = request_part.__name__
    key.__doc__ = request_part.__doc__
    key.request_part = request_part  # type: ignore[attr-defined]
    return key


@SCHEDULERS.register("fcfs", _NO_OPTIONS)
@by_request
def fcfs(rid: int, priority: int, deadline_at_s: float) -> tuple:
    """Earliest-arrived request first, then placement order (the default)."""
    return (rid,)


@SCHEDULERS.register("ready_order", _NO_OPTIONS)
def ready_order(
    rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float
) -> tuple:
    """The op that became ready first (first come, first served at the unit)."""
    return (ready_s, rid, position)


@SCHEDULERS.register("priority", _NO_OPTIONS)
@by_request
def priority_first(rid: int, priority: int, deadline_at_s: float) -> tuple:
    """Highest app priority first, then earliest-arrived request."""
    return (-priority, rid)


@SCHEDULERS.register("edf", _NO_OPTIONS)
@by_request
def earliest_deadline(rid: int, priority: int, deadline_at_s: float) -> tuple:
    """Earliest absolute deadline first (requests without one last), then arrival."""
    return (deadline_at_s, rid)


@dataclass(frozen=True)
class ReplicaLoad:
    """What a dispatcher sees of one replica when a request arrives.

    Attributes
    ----------
    in_flight : int
        This app's requests dispatched to the replica and not yet complete.
    backlog_s : float
        Work (s) queued on the replica's units, from every app, not yet started.
    predicted : float
        For ``adaptive`` dispatch: the objective (s or J) of a request sent to this
        replica now, predicted under the observed conditions; NaN otherwise.
    """

    in_flight: int
    backlog_s: float
    predicted: float = math.nan


#: dispatch(loads, turn, rng) -> replica index
Dispatcher = Callable[[Sequence[ReplicaLoad], int, np.random.Generator], int]

DISPATCHERS: Registry[Dispatcher] = Registry("dispatcher", "socsim.dispatchers")


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


@DISPATCHERS.register("adaptive", _NO_OPTIONS)
def adaptive(loads: Sequence[ReplicaLoad], turn: int, rng: np.random.Generator) -> int:
    """The replica with the best predicted objective (ties: the first listed)."""
    return _argmin([load.predicted for load in loads])


#: dispatchers that need :attr:`ReplicaLoad.predicted` (the engine predicts only for them)
PREDICTIVE_DISPATCHERS = frozenset({"adaptive"})


@dataclass(frozen=True)
class AdaptiveOptions:
    """How an ``adaptive`` app observes the network and when it gives up on a link.

    Attributes
    ----------
    objective : str
        ``latency``, ``device_energy``, ``total_energy`` or ``weighted`` (with
        ``weights``), predicted per candidate with the contention-free estimate under
        the observed conditions.
    weights : Mapping[str, float]
        For ``weighted``: per-second and per-joule weights.
    ewma_alpha : float
        Weight of the newest throughput sample of a link direction, in (0, 1].
    stale_s : float
        A direction without a sample for this long is assumed back at its nominal
        bandwidth (s): the next request that prefers it probes it.
    fallback : int or None
        Replica index a request restarts on when one of its hops times out (the
        workload entry's ``transfer_timeout_s``); None picks the first replica that
        uses no network (an error at run start if there is none and a timeout is set).
    """

    objective: str = "latency"
    weights: Mapping[str, float] = field(default_factory=dict)
    ewma_alpha: float = 0.5
    stale_s: float = 10.0
    fallback: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.ewma_alpha <= 1:
            raise SocsimError(f"adaptive: ewma_alpha must be in (0, 1], got {self.ewma_alpha}")
        if not self.stale_s > 0:
            raise SocsimError(f"adaptive: stale_s must be > 0, got {self.stale_s}")
        if self.fallback is not None and self.fallback < 0:
            raise SocsimError(
                f"adaptive: fallback must be a replica index >= 0, got {self.fallback}"
            )


def ewma(previous: float | None, sample: float, alpha: float) -> float:
    """Exponentially weighted moving average; the first sample stands alone."""
    return sample if previous is None else alpha * sample + (1 - alpha) * previous


NO_DEADLINE = math.inf
