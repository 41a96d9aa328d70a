"""Units going down and up during a run, and the requests their failures hit.

One job: at each failure instant, take the failing units down (cut the ops they run,
empty their queues), give up the attempts of the requests in flight that needed them,
and retry, park or drop each by its app's ``on_failure`` (:mod:`simulator.failures`);
at each recovery, bring units up and restart the parked requests whose replica is up.
A request arriving while its replica is down goes to a replica that is up, else is
parked or dropped the same way. Links to a failed node are down through the link outage
rule (the engine gives :class:`~simulator.engine.network.Network` the node's intervals).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import simpy

from simulator.engine.book import RequestBook
from simulator.engine.clock import after
from simulator.engine.fallback import Fallback
from simulator.engine.ledger import Ledger
from simulator.engine.memory import MemoryGate
from simulator.engine.servers import FailingServer, UnitServer
from simulator.engine.state import DONE, App, Replica, Request
from simulator.engine.watch import PowerWatch
from simulator.errors import SimulationError
from simulator.platform import Platform

#: ``start(request, now)``: run an attempt from its input.
Start = Callable[[Request, float], None]


def _not_scheduled(request: Request, now: float) -> None:
    raise SimulationError("Failures.schedule was not called before the run")


#: columns of the ``failures`` table (one row per unit and down interval)
FAILURE_COLUMNS = (
    "node",
    "unit",
    "start_s",
    "end_s",
    "down_s",
    "ops_cut",
    "requests_hit",
    "retried",
    "parked",
    "dropped",
    "request_ids",
)


class _Interval:
    """One unit's down interval and what it did to the work."""

    __slots__ = ("dropped", "end_s", "ops_cut", "parked", "retried", "rids", "start_s", "uid")

    def __init__(self, uid: str, start_s: float, end_s: float):
        self.uid = uid
        self.start_s = start_s
        self.end_s = end_s
        self.ops_cut = self.retried = self.parked = self.dropped = 0
        self.rids: list[int] = []


class Failures:
    """Schedules the down intervals and handles what they hit.

    Parameters
    ----------
    env : simpy.Environment
    down : mapping of unit id -> merged down intervals (s)
    servers : mapping of unit id -> UnitServer
    apps : sequence of App
    book : RequestBook
    fallback : Fallback
        Undoes an attempt (:meth:`Fallback.undo`).
    ledger : Ledger
        Books the ops cut short (busy time and energy until the failure).
    watch : PowerWatch
        A watched unit's idle power leaves its node while it is down.
    platform : Platform
    on_over : callable(App)
        A request of the app is over (dropped here).
    """

    def __init__(
        self,
        env: simpy.Environment,
        down: Mapping[str, Sequence[tuple[float, float]]],
        servers: Mapping[str, UnitServer],
        apps: Sequence[App],
        book: RequestBook,
        fallback: Fallback,
        ledger: Ledger,
        watch: PowerWatch,
        platform: Platform,
        on_over: Callable[[App], None],
    ):
        self.env = env
        self.down = down
        #: the servers of the units that fail: the engine builds them as FailingServer
        self.servers: dict[str, FailingServer] = {}
        for uid in down:
            server = servers[uid]
            if not isinstance(server, FailingServer):
                raise SimulationError(f"failures: unit '{uid}' fails but its server cannot fail")
            self.servers[uid] = server
        self.apps = apps
        self.book = book
        self.fallback = fallback
        self.ledger = ledger
        self.watch = watch
        self.platform = platform
        self.on_over = on_over
        self.start: Start = _not_scheduled
        #: nodes' pools under ``refuse`` (None: no pool refuses)
        self.memory: MemoryGate | None = None
        self.intervals = [_Interval(uid, a, b) for uid, spans in down.items() for a, b in spans]
        self._current: dict[str, _Interval] = {}  # unit id -> its interval under way
        self._parked: list[tuple[Request, bool]] = []  # (attempt, any replica will do)
        self._oldest = 0  # no request before this id is in flight
        self._units = {id(rep): frozenset(rep.plan.units) for app in apps for rep in app.replicas}

    def schedule(self, start: Start) -> None:
        """Put every down and up instant on the schedule; ``start`` runs an attempt."""
        self.start = start
        changes: dict[float, tuple[list[_Interval], list[_Interval]]] = {}
        for interval in self.intervals:
            changes.setdefault(interval.start_s, ([], []))[0].append(interval)
            changes.setdefault(interval.end_s, ([], []))[1].append(interval)
        for t in sorted(changes):
            after(self.env, t, partial(self._at, *changes[t]))

    # -- the instants --------------------------------------------------------------------
    def _at(self, failing: list[_Interval], recovering: list[_Interval], _event) -> None:
        self._change(failing, recovering)

    def _change(self, failing: list[_Interval], recovering: list[_Interval]) -> None:
        now = self.env._now
        for interval in recovering:  # a unit up and down at once: it stays down
            del self._current[interval.uid]
            self.servers[interval.uid].recover()
            self._idle_power(interval.uid, +1)
        cut = []
        for interval in failing:
            self._current[interval.uid] = interval
            cuts = self.servers[interval.uid].fail()
            cut += [(interval, *c) for c in cuts]
            interval.ops_cut += len(cuts)
            self._idle_power(interval.uid, -1)
        hit: dict[int, Request] = {}
        for interval, (request, i), start_s, stream in cut:
            self._cut(interval.uid, request, i, start_s, stream, now)
            hit[request.rid] = request
        if failing:
            hit.update((r.rid, r) for r in self._in_flight() if self._hit(r))
            for rid in sorted(hit):
                self._give_up(hit[rid], now)
        if recovering:
            self._resume(now)

    def _cut(self, uid: str, request: Request, i: int, start_s: float, stream, now: float) -> None:
        """Op ``i`` of ``request`` ran on ``uid`` from ``start_s`` until the failure."""
        step = request.steps[i]
        if stream is not None:
            stream.channel.cancel(stream, now)
        if step.dvfs is not None and request.levels is not None:  # at its starting level
            level = request.levels[i]
            busy_w = step.dvfs.busy_w[level]
            step.dvfs.cut(start_s, step.level_s, level, now)
        else:
            busy_w = self.platform.unit(uid).active_w
        if step.watched is not None:
            self.watch.ended(step.watched, request, i)
        self.ledger.partial_op(uid, start_s, now, request.plan.core_share[i], busy_w)
        step.tally.memory_bytes -= step.output_bytes  # its output will never be written
        if request.abandoned and request.reserved is not None and self.memory is not None:
            self.memory.release_op(request, uid, step.output_bytes)  # an attempt given up
        assert request.phase is not None and request.holders is not None  # tracked
        request.phase[i] = DONE
        request.holders[i] = 0  # nothing of it to free again

    def _in_flight(self) -> list[Request]:
        """The records that may be in flight: from the oldest not over yet (every record
        is kept: the scan does not grow with the requests long done), or those the book
        holds (trace none holds only those in flight)."""
        if not self.book.keep_records:
            return list(self.book.current())
        records = self.book.records()
        k = self._oldest
        while k < len(records) and (records[k].finish_s is not None or records[k].drop_reason):
            k += 1
        self._oldest = k
        return records[k:]

    def _hit(self, request: Request) -> bool:
        """Whether an attempt in flight needs a unit that is down: an op there not done,
        or an output there not yet delivered."""
        if request.finish_s is not None or request.drop_reason or request.abandoned:
            return False
        if request.phase is None or request.holders is None:
            return False
        current, holders = self._current, request.holders
        units = request.plan.units
        return any(
            units[i] in current and (phase != DONE or holders[i] > 0)
            for i, phase in enumerate(request.phase)
        )

    def _first_down(self, rep: Replica) -> str | None:
        for uid in rep.plan.units:
            if uid in self._current:
                return uid
        return None

    def _give_up(self, request: Request, now: float) -> None:
        uid = self._first_down(request.rep)
        if request.abandoned or uid is None:  # cut on two units at once: given up already
            return
        interval = self._current[uid]
        interval.rids.append(request.rid)
        self.fallback.undo(request)
        self._route(request, now, interval)

    def _route(self, request: Request, now: float, interval: _Interval) -> None:
        """Restart the request now on a replica that is up, park it or drop it."""
        app = request.app
        policy = app.entry.on_failure
        if policy == "drop":
            interval.dropped += 1
            unit = interval.uid
            self.book.drop(
                request, f"unit '{unit}' down from {interval.start_s:.9g} s (on_failure: drop)"
            )
            self.on_over(app)
            return
        rep = self._up_replica(app) if policy == "retry" else None
        if rep is None:
            interval.parked += 1
            self._parked.append((request, policy == "retry"))
            return
        interval.retried += 1
        self._restart(request, rep, now)

    def _up_replica(self, app: App) -> Replica | None:
        """The replica of ``app`` with every unit up and the fewest requests in flight
        (the first such in order on a tie), or None."""
        ups = [rep for rep in app.replicas if self._first_down(rep) is None]
        return min(ups, key=lambda rep: rep.in_flight) if ups else None

    def _restart(self, request: Request, rep: Replica, now: float) -> None:
        again = Request(request.rid, request.app, rep, request.arrival_s)
        again.first_start_s = request.first_start_s
        again.energy_j = request.energy_j
        again.device_energy_j = request.device_energy_j
        again.fell_back = request.fell_back
        rep.in_flight += 1
        self.book[request.rid] = again
        self.start(again, now)

    def _resume(self, now: float) -> None:
        parked, self._parked = self._parked, []
        for request, anywhere in parked:
            rep = self._up_replica(request.app) if anywhere else request.rep
            if rep is None or self._first_down(rep) is not None:
                self._parked.append((request, anywhere))
            else:
                self._restart(request, rep, now)

    def admit(self, request: Request, now: float) -> None:
        """A new request: started at once when its replica is up, else routed as a hit
        request (to a replica that is up, parked or dropped)."""
        uid = self._first_down(request.rep)
        if uid is None:
            self.start(request, now)
            return
        request.rep.in_flight -= 1
        request.abandoned = True
        interval = self._current[uid]
        interval.rids.append(request.rid)
        self._route(request, now, interval)

    def held(self) -> bool:
        """Whether requests are parked until a unit recovers."""
        return bool(self._parked)

    def _idle_power(self, uid: str, sign: int) -> None:
        watched = self.watch.units.get(uid)
        if watched is not None:  # a unit down draws nothing, not even idle power
            watched.node.changed(sign * watched.idle_w)

    def rows(self) -> list[tuple]:
        """The ``failures`` table's rows, in unit and time order."""
        out = []
        for iv in sorted(self.intervals, key=lambda iv: (iv.uid, iv.start_s)):
            node = self.platform.node_of(iv.uid).name
            rids = ",".join(str(r) for r in sorted(set(iv.rids)))
            out.append(
                (
                    node,
                    iv.uid,
                    iv.start_s,
                    iv.end_s,
                    iv.end_s - iv.start_s,
                    iv.ops_cut,
                    len(set(iv.rids)),
                    iv.retried,
                    iv.parked,
                    iv.dropped,
                    rids,
                )
            )
        return out
