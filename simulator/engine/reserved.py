"""Online HEFT in a run: plan each request at its arrival, run units in reservation order.

Two small components, wired by :meth:`~simulator.engine.run.Engine.__init__` only when
an app's placement is ``{policy: heft, online: true}``:

* :class:`ReservedUnit`, one per unit online apps may reserve: it stands in front of the
  unit's :class:`~simulator.engine.servers.Server` and passes it one op at a time, the
  one whose reservation key (reserved start, then reservation order) is the smallest of
  the ops not yet run, once that op is ready; an op that is ready before its turn waits.
  The unit is not work-conserving on purpose: that is what makes the simulated schedule
  the planned one (a ready op never takes a gap the plan left to a later reservation).
* :class:`OnlineRun`: when a request of an online app arrives, asks the pure planner
  (:class:`~simulator.placement.online.OnlineHeft`) for its schedule, compiles the plan
  of its placement (once per distinct placement) and tells each unit its ops' keys.

Why no op waits forever: every op's predecessors have smaller keys (they end no later
than it starts and were reserved before it), so the unfinished op of smallest key over
all units always has its inputs coming and is its unit's next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from heapq import heappop, heappush
from typing import Any

from simulator.engine.ledger import Ledger
from simulator.engine.servers import UnitServer, unbound_callback
from simulator.engine.state import Replica
from simulator.errors import SimulationError
from simulator.placement.online import OnlineHeft, online_apps, shared_units
from simulator.placement.plan import ExecutionPlan, compile_plan
from simulator.platform import CostOracle
from simulator.spec.scenario import Scenario


class ReservedUnit:
    """A unit that runs its reserved ops one at a time, in the order of their keys.

    Parameters
    ----------
    server : UnitServer
        The unit's server; only ops of online apps may be queued on it.

    It has :meth:`submit` with the server's signature, so the dataflow queues an op on
    it as on any unit (the scheduler's key it passes is ignored: the reservation's
    counts).
    """

    __slots__ = ("busy", "keys", "pending", "ready", "server")

    def __init__(self, server: UnitServer):
        self.server = server
        self.pending: list[tuple] = []  # heap: keys of the reserved ops not yet started
        self.keys: dict[tuple[int, int], tuple] = {}  # (request id, op index) -> key
        self.ready: dict[tuple, tuple[float, Any]] = {}  # key -> (duration s, payload)
        self.busy = False  # an op passed to the server has not ended

    def reserve(self, rid: int, i: int, key: tuple) -> None:
        """Op ``i`` of request ``rid`` runs here at its turn by ``key``."""
        heappush(self.pending, key)
        self.keys[(rid, i)] = key

    def submit(self, _key: Any, duration_s: float, payload: Any) -> None:
        """The op of ``payload`` (request, op index) is ready: run it at its turn."""
        request, i = payload
        key = self.keys.pop((request.rid, i))
        self.ready[key] = (duration_s, payload)
        if not self.busy:
            self._release()

    def _release(self) -> None:
        pending = self.pending
        if pending and pending[0] in self.ready:
            key = heappop(pending)
            duration_s, payload = self.ready.pop(key)
            self.busy = True
            self.server.submit(key, duration_s, payload)

    def attach(self) -> None:
        """Learn when the server's ops end (after the dataflow set its callbacks)."""
        server = self
        unit = self.server
        done, start = unit.on_finish, unit.on_start
        if done is unbound_callback or start is unbound_callback:
            raise SimulationError(f"unit {unit.name}: gated before its callbacks were set")

        def on_finish(payload, start_s: float, end_s: float) -> None:
            server.busy = False
            done(payload, start_s, end_s)  # may queue the next op here: it starts now
            if not server.busy:
                server._release()

        unit.serve_with(start, on_finish)


#: ``build(plan, app, servers)``: the engine's replica of ``plan`` whose ops queue on ``servers``
BuildReplica = Callable[[ExecutionPlan, str, Mapping[str, Any]], Replica]


class OnlineRun:
    """The online apps of a run: their planner, their units' gates, their plans.

    Parameters
    ----------
    scenario : Scenario
    plans : mapping of app name -> tuple of ExecutionPlan
        Every app's static plans (an online app's: HEFT for a lone request at t = 0).
    oracle : CostOracle
    units : mapping of unit id -> UnitServer
    ledger : Ledger
        Weights of an op become resident on a unit when a request is first planned
        there (the static plan's from t = 0, as for any app).
    build : BuildReplica

    Raises
    ------
    PlacementError
        When a unit online apps may reserve also runs ops of an app that is not online.
    """

    def __init__(
        self,
        scenario: Scenario,
        plans: Mapping[str, ExecutionPlan | tuple[ExecutionPlan, ...]],
        oracle: CostOracle,
        units: Mapping[str, UnitServer],
        ledger: Ledger,
        build: BuildReplica,
    ):
        online = online_apps(scenario)
        self.planner = OnlineHeft(online, oracle)
        self.graphs = {app: graph for app, (graph, _, _) in online.items()}
        self.oracle = oracle
        self.ledger = ledger
        self.build = build
        mine = {app: (p,) if isinstance(p, ExecutionPlan) else tuple(p) for app, p in plans.items()}
        units_of = {app: [plan.units for plan in each] for app, each in mine.items()}
        for _, error in shared_units(scenario, self.planner, units_of):
            raise error
        reserved = {uid for app in online for uid in self.planner.units_of(app)}
        self.gates = {uid: ReservedUnit(units[uid]) for uid in sorted(reserved)}
        self.replicas: dict[tuple, Replica] = {}  # per (app, order, units): built once
        self.resident: set[tuple[str, str, str]] = {
            (plan.model, op, uid)
            for app in online
            for plan in mine[app]
            for op, uid in zip(plan.ops, plan.units, strict=True)
        }

    @property
    def apps(self) -> list[str]:
        """The online apps."""
        return list(self.planner.apps)

    def attach(self) -> None:
        """Gate the reserved units (after the dataflow set the servers' callbacks)."""
        for gate in self.gates.values():
            gate.attach()

    def starter(self, app: str) -> Callable[[int, float], Replica]:
        """``start(rid, now)`` for ``app``: plan request ``rid`` arriving now."""
        return lambda rid, now: self.start(app, rid, now)

    def start(self, app: str, rid: int, now: float) -> Replica:
        """Plan request ``rid`` of ``app`` arriving ``now`` (s); the replica it runs on."""
        schedule = self.planner.plan(app, now)
        placement = schedule.placement
        units = tuple(placement.assignment[op] for op in placement.order)
        key = (app, placement.order, units)
        replica = self.replicas.get(key)
        if replica is None:
            plan = compile_plan(self.graphs[app], placement, self.oracle)
            replica = self.replicas[key] = self.build(plan, app, self.gates)
            self._load_weights(plan)
        for i, reservation in enumerate(schedule.reservations):
            self.gates[reservation.unit].reserve(rid, i, reservation.key)
        return replica

    def in_flight(self) -> int:
        """Requests of online apps not over."""
        return sum(replica.in_flight for replica in self.replicas.values())

    def _load_weights(self, plan: ExecutionPlan) -> None:
        tallies = self.ledger.tallies
        for op, uid, nbytes in zip(plan.ops, plan.units, plan.weight_bytes, strict=True):
            if (plan.model, op, uid) not in self.resident:
                self.resident.add((plan.model, op, uid))
                tallies[uid].weights_bytes += nbytes
                tallies[uid].alloc(nbytes)
