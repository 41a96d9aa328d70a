"""Workload entries and the arrival-process registry (pure: no SimPy).

An arrival process is a generator function ``process(options, rng)`` that yields, in
order, either an absolute arrival time in seconds (float) or an
:class:`AfterCompletion` token meaning "the next request comes ``think_s`` after one of
this app's requests completes" (closed loop). The engine interprets the stream; the
number of requests is bounded by the entry's ``count`` and ``duration_s``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.errors import SocsimError
from simulator.failures import ON_FAILURE
from simulator.frozen import FrozenMap
from simulator.limits import MAX_CONCURRENCY, MAX_HORIZON_S, MAX_REQUESTS, MIN_PERIOD_S
from simulator.registry import Registry
from simulator.rules import adaptive_dispatch, app_bounded, placement_xor_replicas, raise_first
from simulator.scheduling import DISPATCHERS, PREDICTIVE_DISPATCHERS, AdaptiveOptions
from simulator.schema import Field, ListOf, Number, Record

ArrivalProcess = Any  # (options: Mapping, rng: np.random.Generator) -> Iterator


@dataclass(frozen=True)
class AfterCompletion:
    """Closed-loop token: issue the next request ``think_s`` after a completion."""

    think_s: float = 0.0


ARRIVALS: Registry[ArrivalProcess] = Registry("arrival process", "socsim.arrivals")

#: Bounds in the units written (simulator.limits): times within the horizon, periods of
#: at least 1 ns (so each arrival advances float64 time), rates of at most 1 GHz.
MAX_MS = MAX_HORIZON_S * 1e3
MIN_PERIOD_MS = MIN_PERIOD_S * 1e3
MAX_RATE_HZ = 1 / MIN_PERIOD_S
OFFSET_MS = Number("ms", 1e-3, ge=0, le=MAX_MS)


@ARRIVALS.register(
    "periodic",
    Record(
        {
            "period_ms": Field(Number("ms", 1e-3, ge=MIN_PERIOD_MS, le=MAX_MS), to="period_s"),
            "rate_hz": Field(Number("Hz", ge=1 / MAX_HORIZON_S, le=MAX_RATE_HZ)),
            "offset_ms": Field(OFFSET_MS, default=0.0, to="offset_s"),
        },
        exclusive=(("period_ms", "rate_hz"),),
        name="periodic arrival",
    ),
)
def periodic(options: Mapping[str, Any], rng: np.random.Generator) -> Iterator[float]:
    """One request every ``period_ms`` (or at ``rate_hz``), the first at ``offset_ms``."""
    period_s = options.get("period_s") or 1.0 / options["rate_hz"]
    k = 0
    while True:
        yield options["offset_s"] + k * period_s
        k += 1


@ARRIVALS.register(
    "poisson",
    Record(
        {
            "rate_hz": Field(Number("Hz", ge=1 / MAX_HORIZON_S, le=MAX_RATE_HZ)),
            "offset_ms": Field(OFFSET_MS, default=0.0, to="offset_s"),
        },
        name="poisson arrival",
    ),
)
def poisson(options: Mapping[str, Any], rng: np.random.Generator) -> Iterator[float]:
    """Poisson arrivals: exponential gaps of mean 1 / ``rate_hz``, from ``offset_ms``."""
    t = options["offset_s"]
    scale = 1.0 / options["rate_hz"]
    while True:
        t += float(rng.exponential(scale))
        yield t


@ARRIVALS.register(
    "closed_loop",
    Record(
        {
            "concurrency": Field(Number(integer=True, ge=1, le=MAX_CONCURRENCY), default=1),
            "think_ms": Field(Number("ms", 1e-3, ge=0, le=MAX_MS), default=0.0, to="think_s"),
        },
        name="closed-loop arrival",
    ),
)
def closed_loop(options: Mapping[str, Any], rng: np.random.Generator) -> Iterator[Any]:
    """``concurrency`` requests at t = 0, then one ``think_ms`` after each completion."""
    for _ in range(options["concurrency"]):
        yield 0.0
    while True:
        yield AfterCompletion(options["think_s"])


@ARRIVALS.register(
    "trace",
    Record(
        {
            "times_ms": Field(
                ListOf(OFFSET_MS, min_len=1, max_len=MAX_REQUESTS, ascending=True),
                to="times_s",
            )
        },
        name="trace arrival",
    ),
)
def trace(options: Mapping[str, Any], rng: np.random.Generator) -> Iterator[float]:
    """Requests at the listed times (ms from the start), which must not decrease."""
    yield from options["times_s"]


def _periodic_requests(options: Mapping[str, Any], window_s: float) -> float:
    period_s = options.get("period_s") or 1.0 / options["rate_hz"]
    return 1 + window_s // period_s


#: Requests an arrival process issues in ``window_s`` seconds after its offset (the
#: expectation for Poisson): ``(options, window_s) -> float``. Processes not listed
#: (closed loop, registered ones) are held to :data:`~simulator.limits.MAX_REQUESTS`
#: while running.
REQUEST_ESTIMATES = {
    "periodic": _periodic_requests,
    "poisson": lambda options, window_s: options["rate_hz"] * window_s,
}


def expected_requests(
    process: str, options: Mapping[str, Any], count: int | None, duration_s: float | None
) -> float | None:
    """How many requests an app issues (pure; see :data:`REQUEST_ESTIMATES`).

    Returns
    -------
    float or None
        ``count``, the trace's length, or the estimate within ``duration_s``, whichever
        is smallest; None when unknown (a closed loop bounded by a duration only).
    """
    bounds = [] if count is None else [float(count)]
    if process == "trace":
        bounds.append(float(len(options["times_s"])))
    elif duration_s is not None and process in REQUEST_ESTIMATES:
        window_s = duration_s - options.get("offset_s", 0.0)
        bounds.append(REQUEST_ESTIMATES[process](options, window_s) if window_s >= 0 else 0.0)
    return min(bounds) if bounds else None


@dataclass(frozen=True)
class WorkloadEntry:
    """One app: a model issued from a source node by an arrival process.

    Attributes
    ----------
    app : str
        Unique name of the app.
    model : str
        Name of a model of the scenario.
    source : str
        Node the requests start at; inputs come from it and outputs return to it.
    arrival : str
        Name of an arrival process in :data:`ARRIVALS`.
    arrival_options : Mapping
        Validated options of that process (SI units).
    count : int or None
        Number of requests; ``None`` means bounded by ``duration_s``.
    duration_s : float or None
        No arrival after this time (s).
    deadline_s : float or None
        Relative deadline of each request (s).
    priority : int
        Larger is more urgent (used by schedulers that honour priority).
    placement : PlacementSpec or None
        Overrides the scenario's placement for this app.
    replicas : tuple of PlacementSpec
        Several placements (replicas) to balance requests over; excludes ``placement``.
    dispatch : str
        Name of the dispatcher (:data:`simulator.scheduling.DISPATCHERS`) that picks a
        replica for each request.
    adaptive : AdaptiveOptions or None
        With ``dispatch='adaptive'``: how the app observes links and where it falls
        back (defaults apply when None).
    transfer_timeout_s : float or None
        A network hop of a request not finished this long after it was submitted
        (queueing, radio promotion and serialisation included) gives the request's
        attempt up: an adaptive app restarts it on its fallback replica, any other
        app drops it. None: hops wait as long as it takes.
    on_failure : str
        What a request hit by a failure does: ``retry``, ``wait`` or ``drop``
        (:mod:`simulator.failures`).
    input_bytes : int or None
        What a request sends on each network move from its source (a JPEG of the frame,
        a message); None: the model's input tensor (docs/requests.md).
    response_bytes : int or None
        What each output returned over the network carries; 0: no return transfer;
        None: the output tensor.
    """

    app: str
    model: str
    source: str
    arrival: str
    arrival_options: Mapping[str, Any]
    count: int | None = None
    duration_s: float | None = None
    deadline_s: float | None = None
    priority: int = 0
    placement: Any = None
    replicas: tuple = ()
    dispatch: str = "round_robin"
    adaptive: AdaptiveOptions | None = None
    transfer_timeout_s: float | None = None
    on_failure: str = "retry"
    input_bytes: int | None = None
    response_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.arrival not in ARRIVALS:
            ARRIVALS.get(self.arrival)  # raises with the nearest name
        raise_first(app_bounded(self.app, self.count, self.duration_s, self.arrival))
        if self.count is not None and self.count < 1:
            raise SocsimError(f"app '{self.app}': count must be >= 1")
        if self.duration_s is not None and not (
            self.duration_s > 0 and math.isfinite(self.duration_s)
        ):
            raise SocsimError(f"app '{self.app}': duration_s must be > 0")
        if self.on_failure not in ON_FAILURE:
            raise SocsimError(f"app '{self.app}': on_failure must be one of {ON_FAILURE}")
        object.__setattr__(self, "arrival_options", FrozenMap(self.arrival_options))
        object.__setattr__(self, "replicas", tuple(self.replicas))
        raise_first(placement_xor_replicas(self.app, self.placement, self.replicas))
        DISPATCHERS.get(self.dispatch)  # raises with the nearest name
        has_adaptive = self.adaptive is not None
        raise_first(adaptive_dispatch(self.app, self.dispatch, has_adaptive, len(self.replicas)))
        if self.dispatch in PREDICTIVE_DISPATCHERS and self.adaptive is None:
            object.__setattr__(self, "adaptive", AdaptiveOptions())
        if self.transfer_timeout_s is not None and not self.transfer_timeout_s > 0:
            raise SocsimError(f"app '{self.app}': transfer_timeout_s must be > 0")
        for name in ("input_bytes", "response_bytes"):
            nbytes = getattr(self, name)
            if nbytes is not None and not (isinstance(nbytes, int) and nbytes >= 0):
                raise SocsimError(f"app '{self.app}': {name} must be a whole number >= 0")

    def arrivals(self, rng: np.random.Generator) -> Iterator[Any]:
        """The arrival stream of this entry (see the module docstring)."""
        return ARRIVALS.get(self.arrival).function(self.arrival_options, rng)
