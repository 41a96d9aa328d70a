"""The engine's request sources: one SimPy process per app issues its requests.

One job: issue each app's requests at their arrival times (open loops) or when a
request of the app is over (closed loops), choose the replica that serves each one
(the app's dispatcher; adaptive apps predict every candidate first), and, on battery
runs, say when nothing more can happen but idling (:attr:`Arrivals.over`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import simpy

from simulator.engine.book import RequestBook
from simulator.engine.load import LoadTracker
from simulator.engine.network import Network
from simulator.engine.servers import UnitServer
from simulator.engine.state import App, Request
from simulator.errors import SimulationError
from simulator.limits import MAX_REQUESTS, MAX_SAME_INSTANT_REQUESTS
from simulator.scheduling import ReplicaLoad
from simulator.workload import AfterCompletion

if TYPE_CHECKING:  # built by the engine after the arrivals
    from simulator.engine.reserved import OnlineRun

#: ``start(request, now)``: a new request's input is at its source.
Start = Callable[[Request, float], None]


class Arrivals:
    """Every app's request source.

    Parameters
    ----------
    env : simpy.Environment
    apps : sequence of App
    book : RequestBook
        New requests are added to it (their ids are its count).
    units : mapping of unit id -> UnitServer
        Their backlogs feed the dispatchers.
    network : Network
        Its radios and flows feed adaptive apps' predictions (and the end of battery runs).
    """

    def __init__(
        self,
        env: simpy.Environment,
        apps: Sequence[App],
        book: RequestBook,
        units: Mapping[str, UnitServer],
        network: Network,
    ):
        self.env = env
        self.apps = apps
        self.book = book
        self.units = units
        self.network = network
        # the work committed to each unit, for predictive dispatchers only (None: no
        # app predicts, nothing is tracked)
        self.load = (
            LoadTracker(book, units) if any(app.adaptive is not None for app in apps) else None
        )
        self.sources: list[simpy.Process] = []
        #: the online HEFT apps' OnlineRun, if any (its requests' replicas are its own)
        self.online: OnlineRun | None = None
        #: battery runs: succeeds when no request can come or is in flight, and every
        #: radio is idle (None: not watched)
        self.over: simpy.Event | None = None
        #: whether requests wait for a failed unit's recovery (None: nothing fails)
        self.held: Callable[[], bool] | None = None

    def start(self, seeds: np.random.SeedSequence, start: Start, watch_over: bool) -> None:
        """Start one process per app; each draws from its own child of ``seeds``.

        ``start`` begins a request's execution. ``watch_over`` makes :attr:`over` an
        event that succeeds once nothing more can happen but idling.
        """
        for app, child in zip(self.apps, seeds.spawn(len(self.apps)), strict=True):
            arrivals, dispatch = (np.random.default_rng(s) for s in child.spawn(2))
            if app.exits is not None:  # a third stream: the others stay as they were
                app.exits.seed(child.spawn(1)[0])
            self.sources.append(self.env.process(self._issue(app, arrivals, dispatch, start)))
        if watch_over:
            self.over = self.env.event()
            for source in self.sources:
                source.callbacks.append(lambda _event: self._check_over())
            for radio in self.network.radios:
                radio.on_idle = self._check_over

    def _issue(self, app: App, rng: np.random.Generator, dispatch_rng, start: Start):
        env = self.env
        entry = app.entry
        limit = entry.count
        # a closed loop whose requests end as they are issued would spin at one instant
        instant_s, at_instant = -1.0, 0
        for item in entry.arrivals(rng):
            if limit is not None and app.issued >= limit:
                return
            if isinstance(item, AfterCompletion):
                if app.unconsumed == 0:
                    app.waiter = env.event()
                    yield app.waiter
                app.unconsumed -= 1
                if item.think_s > 0:
                    yield env.timeout(item.think_s)
                elif env.now == instant_s:
                    at_instant += 1
                    if at_instant > MAX_SAME_INSTANT_REQUESTS:
                        raise SimulationError(self._spinning(app))
                else:
                    instant_s, at_instant = env.now, 1
            else:
                if entry.duration_s is not None and item > entry.duration_s:
                    return
                if item > env.now:
                    yield env.timeout(item - env.now)
            if entry.duration_s is not None and env.now > entry.duration_s:
                return
            if self.book.issued >= MAX_REQUESTS:  # a closed loop known only now
                raise SimulationError(
                    f"app '{entry.app}': more than {MAX_REQUESTS:,} requests in one run "
                    "(MAX_REQUESTS); lower count or duration_s"
                )
            now = env.now
            if app.online is not None:  # planned now, into the units' reservations
                rep = app.online(self.book.issued, now)
            else:
                rep = app.replicas[self._choose(app, now, dispatch_rng)]
            rep.in_flight += 1
            if app.exits is None:
                request = Request(self.book.issued, app, rep, now)
            else:  # the exit it takes, and what it runs of the replica
                request = app.exits.request(self.book.issued, app, rep, now)
            self.book.add(request)
            if self.load is not None:
                self.load.add(request.rid)
            start(request, now)
            app.issued += 1

    def _spinning(self, app: App) -> str:
        """Why a closed loop issued MAX_SAME_INSTANT_REQUESTS at one instant, and the way out."""
        return (
            f"app '{app.entry.app}': more than {MAX_SAME_INSTANT_REQUESTS:,} requests issued at "
            f"t = {self.env.now:g} s without time passing: a closed loop with no think time "
            "issues again the moment a request ends, and its requests end as soon as they "
            "are issued (dropped at once, e.g. their unit is down and on_failure is drop); "
            "give the arrival a think_ms, or on_failure: wait or retry"
        )

    def _choose(self, app: App, now: float, rng: np.random.Generator) -> int:
        """The replica of ``app`` that serves a request arriving ``now``."""
        replicas = app.replicas
        if len(replicas) == 1:
            return 0
        predicted = None
        if app.adaptive is not None:
            load = self.load
            assert load is not None  # tracked whenever an app is adaptive (__init__)
            committed = load.remaining_s(now)
            awake, live = self.network.conditions(now)
            predicted = app.adaptive.predict(now, committed, awake, live)
        loads = [
            ReplicaLoad(
                r.in_flight,
                sum(s.backlog_s for s in r.distinct_servers),
                predicted[r.index] if predicted is not None else math.nan,
            )
            for r in replicas
        ]
        return app.dispatcher(loads, app.issued, rng)

    def free_slot(self, app: App) -> None:
        """A request of ``app`` is over (done or dropped): a closed loop may issue again."""
        app.unconsumed += 1
        waiter = app.waiter
        if waiter is not None:
            app.waiter = None
            waiter.succeed()
        if self.over is not None:
            self._check_over()

    def _check_over(self) -> None:
        """Succeed :attr:`over` once nothing more can happen but idling."""
        over = self.over
        assert over is not None  # called only when watched
        if over.triggered or any(source.is_alive for source in self.sources):
            return
        if any(rep.in_flight for app in self.apps for rep in app.replicas):
            return
        if self.held is not None and self.held():  # parked until a failed unit recovers
            return
        if self.online is not None and self.online.in_flight():
            return
        if self.network.busy():
            return
        over.succeed()
