"""The engine: one replicate of a scenario, composed of small SimPy components.

This is the only module family that imports SimPy. :class:`Engine` builds the
components (each with one job and explicit inputs) and wires them:

* units: one :class:`~simulator.engine.servers.Server` per compute unit;
* :class:`~simulator.engine.network.Network`: link directions and device radios;
* DVFS states (:mod:`simulator.hardware.dvfs_state`) and shared DRAM channels
  (:mod:`simulator.engine.dram`);
* :class:`~simulator.engine.watch.PowerWatch`: node power, thermal models, batteries;
* :class:`~simulator.engine.book.RequestBook` and the
  :class:`~simulator.engine.ledger.Ledger`: what happened, for the tables;
* :class:`~simulator.engine.arrivals.Arrivals`: the request sources;
* :class:`~simulator.engine.fallback.Fallback`: timeouts and giving attempts up;
* :class:`~simulator.engine.dataflow.Dataflow`: requests through their plans.

:meth:`Engine.run` returns a :class:`RunRecord`, all that :func:`simulate` and the table
builders read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import simpy

from simulator.engine.arrivals import Arrivals
from simulator.engine.book import RequestBook
from simulator.engine.dataflow import Dataflow
from simulator.engine.dram import DramChannel
from simulator.engine.exits import app_exits
from simulator.engine.failures import Failures
from simulator.engine.fallback import Fallback
from simulator.engine.handover import Handovers, drops_on_handover, mobile_links
from simulator.engine.ledger import Ledger
from simulator.engine.links import FluidLink
from simulator.engine.loop import Progress, step_until
from simulator.engine.medium import MediumPort
from simulator.engine.memory import LoggedTally, MemoryGate
from simulator.engine.network import Network
from simulator.engine.offload import AdaptiveApp
from simulator.engine.pool import PoolServer, pool_servers
from simulator.engine.power import Battery
from simulator.engine.radio import RadioState
from simulator.engine.reserved import OnlineRun
from simulator.engine.runtime import RuntimeDataflow, uses_runtime
from simulator.engine.servers import FailingServer, Server, UnitServer
from simulator.engine.state import App, FastMove, OpStep, Replica, Request
from simulator.engine.thermal import NodeThermal
from simulator.engine.variation import Stretches
from simulator.engine.watch import PowerWatch
from simulator.engine.window import WindowBook, WindowLedger
from simulator.errors import PlacementError, SimulationError
from simulator.failures import down_intervals
from simulator.hardware.dvfs_state import DvfsState
from simulator.placement.online import is_online
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle, unit_id
from simulator.scheduling import DISPATCHERS, SCHEDULERS
from simulator.spec.scenario import Scenario


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What one run leaves for the result tables.

    Attributes
    ----------
    ledger : Ledger
        Rows and aggregates of ops, transfers, memory and energy.
    requests : RequestBook
        Every request's record (under trace ``none``, only the summary's figures).
    radios : tuple of RadioState
        The device radios, in link order (close them at the window's end).
    dvfs : dict of unit id -> DvfsState
    thermal : dict of node -> NodeThermal
    batteries : dict of node -> Battery
    units : dict of unit id -> UnitServer
    links : dict of (link, src node) -> FluidLink
    stopped_at_s : float or None
        When a battery ran out (the run ended then), else None.
    stop_reason : str
        Why requests still in flight at the stop were dropped ("" when none was).
    failures : tuple of tuple
        The ``failures`` table's rows (:data:`~simulator.engine.failures.FAILURE_COLUMNS`).
    down : dict of unit id -> merged down intervals (s)
        The units that failed, and when (they draw no power then).
    memory_log : list of (time_s, unit id, bytes)
        Every change of a unit's memory in use (trace ``full``; else empty).
    handovers : Handovers or None
        With a mobile link: the handovers that happened and what they did to requests.
    """

    ledger: Ledger
    requests: RequestBook
    radios: tuple[RadioState, ...]
    dvfs: dict[str, DvfsState]
    thermal: dict[str, NodeThermal]
    batteries: dict[str, Battery]
    units: dict[str, UnitServer]
    links: dict[tuple[str, str], FluidLink | MediumPort]
    stopped_at_s: float | None
    stop_reason: str
    failures: tuple[tuple, ...] = ()
    down: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    memory_log: list[tuple[float, str, int]] = field(default_factory=list)
    handovers: Handovers | None = None


class Engine:
    """One replicate of a scenario.

    Parameters
    ----------
    scenario : Scenario
    plans : dict of app name -> ExecutionPlan, or -> tuple of plans (one per replica)
    oracle : CostOracle
    replicate : int
        Replicate index; every app and link direction draws from its own stream spawned
        from (seed, replicate).
    keep_rows : bool
        Keep every op and transfer row (false: only the ledger's aggregates).
    keep_records : bool
        Keep every request's record to the end, for the ``requests`` table (false: a
        record is released when its request completes or is dropped; the summary's
        figures are kept either way).
    progress : callable, optional
        Called with (simulated s, requests issued, requests completed) at most once a
        second of wall clock, from 3 s on (:data:`Progress`).

    Raises
    ------
    PlacementError
        When an adaptive app with a transfer timeout has nothing local to fall back to.
    """

    def __init__(
        self,
        scenario: Scenario,
        plans: Mapping[str, ExecutionPlan | tuple[ExecutionPlan, ...]],
        oracle: CostOracle,
        replicate: int = 0,
        keep_rows: bool = True,
        keep_records: bool = True,
        progress: Progress | None = None,
    ):
        self.scenario = scenario
        self.replicate = replicate
        self.progress = progress
        self.env = env = simpy.Environment()
        platform = scenario.platform
        self.dvfs = {
            uid: DvfsState(platform.unit(uid))
            for uid in platform.unit_ids
            if platform.unit(uid).dvfs is not None
        }
        self.down: dict[str, tuple[tuple[float, float], ...]] = {}
        node_down: dict[str, tuple[tuple[float, float], ...]] = {}
        if scenario.failures:
            nodes = {name: platform.units_of(name) for name in platform.nodes}
            self.down, node_down = down_intervals(
                scenario.failures, nodes, scenario.seed, replicate
            )
        # only a unit that may fail pays for asking whether it is down (FailingServer)
        self.units: dict[str, UnitServer] = {
            uid: (FailingServer if uid in self.down else Server)(env, uid, platform.unit(uid).slots)
            for uid in platform.unit_ids
        }
        self.units.update(pool_servers(env, platform, plans))  # per-op cores only
        if self.down:
            pooled = sorted(uid for uid in self.down if isinstance(self.units[uid], PoolServer))
            if pooled:  # a core pool cannot cut its jobs yet
                raise PlacementError(
                    f"failures: unit '{pooled[0]}' fails but a placement runs it as a core "
                    "pool (per-op cores, docs/cost-model.md); give its ops the unit's "
                    "default cores, or fail another unit"
                )
        self.network = Network(env, platform, scenario.seed, replicate, node_down)
        # each node's DRAM, shared by the ops its units run at once (finite bandwidth only)
        self.dram: dict[str, DramChannel] = {}
        for node in platform.nodes.values():
            if math.isfinite(node.dram_bps):
                channel = DramChannel(env, node.name, node.dram_bps)
                for unit in node.units:
                    self.dram[unit_id(node.name, unit.name)] = channel
        #: every change of a unit's memory in use, (time_s, unit, bytes): trace full with
        #: ``memory_series: true`` (the logging tally: 1.27x the engine's time,
        #: bench/memory_series.py)
        self.memory_log: list[tuple[float, str, int]] = []
        logged = lambda uid: LoggedTally(env, self.memory_log, uid)  # noqa: E731
        series = keep_rows and scenario.memory_series  # a call per change: only on demand
        new_tally = logged if series else None
        if scenario.energy_window_s is None:
            self.ledger = Ledger(platform, self.units, keep_rows, new_tally)
        else:  # energy over a fixed interval: each op clipped to it as it ends
            self.ledger = WindowLedger(
                platform, self.units, keep_rows, scenario.energy_window_s, new_tally
            )
        self.stretches = Stretches(platform, scenario.seed, replicate)
        self.watch = PowerWatch(env, platform, self.network.radios, self.dvfs)
        # online HEFT apps: planned per request at arrival, their units in reservation order
        online = None
        if any(is_online(s) for e in scenario.workload for s in scenario.placements_for(e)):
            # each request's plan runs as replica 0, its ops queued on the units' gates
            build = lambda plan, app, gates: self._replica(0, plan, app, gates)  # noqa: E731
            online = OnlineRun(scenario, plans, oracle, self.units, self.ledger, build)
        apps = []
        drops = drops_on_handover(platform)  # a handover may give attempts up: track hops
        for i, entry in enumerate(scenario.workload):
            mine = plans[entry.app]
            mine = (mine,) if isinstance(mine, ExecutionPlan) else tuple(mine)
            replicas = tuple(self._replica(k, plan, entry.app) for k, plan in enumerate(mine))
            adaptive = (
                AdaptiveApp(entry.app, entry.adaptive, mine, oracle, entry.transfer_timeout_s)
                if entry.adaptive is not None
                else None
            )
            exits = app_exits(
                scenario.models[entry.model],
                replicas,
                oracle,
                partial(self._replica, app=entry.app),
            )
            dispatcher = DISPATCHERS.get(entry.dispatch).function
            start = online.starter(entry.app) if online and entry.app in online.apps else None
            # a timeout, a handover that drops, or a failure may undo an attempt
            tracked = entry.transfer_timeout_s is not None or drops or bool(self.down)
            apps.append(
                App(
                    i,
                    entry,
                    replicas,
                    dispatcher,
                    adaptive,
                    exits=exits,
                    online=start,
                    tracked=tracked,
                    failures=bool(self.down),
                    handover_drops=drops,
                )
            )
            for replica in replicas:
                self.ledger.load_weights(replica.plan)
        if scenario.energy_window_s is None:
            self.book = RequestBook(keep_records)
        else:
            self.book = WindowBook(keep_records, scenario.energy_window_s)
        self.arrivals = Arrivals(env, apps, self.book, self.units, self.network)
        monitors = [app.adaptive.monitor for app in apps if app.adaptive is not None]
        fallback = Fallback(self.ledger, self.book, monitors, self.arrivals.free_slot)
        # an app placed by a run-time rule (met, etf...) has its ops' units decided as
        # they become ready: a Dataflow that does so, only then (engine/runtime.py)
        runtime = uses_runtime(apps)
        self.dataflow = (RuntimeDataflow if runtime else Dataflow)(
            env,
            SCHEDULERS.get(scenario.scheduler).function,
            self.dvfs,
            self.dram,
            self.network,
            self.watch,
            self.ledger,
            self.book,
            fallback,
            monitors,
            self.arrivals.free_slot,
        )
        self.dataflow.serve(self.units.values())
        self.memory = MemoryGate(
            platform, self.ledger.weights, self.ledger.tallies, tuple(self.units.values())
        )
        self.failures = None
        if self.down:
            self.failures = Failures(
                env,
                self.down,
                self.units,
                apps,
                self.book,
                fallback,
                self.ledger,
                self.watch,
                platform,
                self.arrivals.free_slot,
            )
            self.arrivals.held = self.failures.held
        if self.memory.active:
            self.dataflow.memory = fallback.memory = self.memory
            if self.failures is not None:
                self.failures.memory = self.memory
        # a dropped attempt's fallback starts as a timed-out one's does
        restart = lambda request, now: self.dataflow.restart(request, now)  # noqa: E731
        self.handovers = (
            Handovers(env, platform, self.network.links, fallback, restart)
            if mobile_links(platform)
            else None
        )
        self.online = online
        if online is not None:
            online.attach()
            self.arrivals.online = online
        if isinstance(self.dataflow, RuntimeDataflow):
            # a run-time decision reads each unit's workers and queue (Server's); a core
            # pool books cores instead, which the rules do not model yet
            plain = {u: s for u, s in self.units.items() if isinstance(s, Server)}
            pooled = sorted(set(self.units) - set(plain))
            if pooled:
                raise PlacementError(
                    "a run-time policy (met, eft, etf, stf, etf_lb) cannot be combined with "
                    f"a unit run as a core pool: a placement gives unit '{pooled[0]}' per-op "
                    "cores (docs/cost-model.md); give its ops the unit's default cores, or "
                    "use a static policy such as heft"
                )
            self.dataflow.prepare(apps, plain, oracle, scenario.models, self._step)

    def _step(self, plan: ExecutionPlan, i: int, app: str, trace_code: int, servers=None) -> OpStep:
        """Op ``i`` of ``plan`` run for ``app`` with its unit's run-time objects
        (``servers``: the units' servers, or online HEFT's gates in front of them)."""
        uid = plan.units[i]
        return OpStep(
            plan,
            i,
            (self.units if servers is None else servers)[uid],
            self.scenario.platform.node_of(uid).role == "device",
            self.dvfs.get(uid),
            self.dram.get(uid),
            self.watch.units.get(uid),
            self.ledger,
            app,
            trace_code,
            self.stretches.get(uid, plan.kinds[i]),
        )

    def _replica(self, index: int, plan: ExecutionPlan, app: str, servers=None) -> Replica:
        ledger = self.ledger
        first_code = ledger.op_codes(app, plan)
        steps = tuple(self._step(plan, i, app, first_code + i, servers) for i in range(plan.size))
        return Replica(
            index=index,
            plan=plan,
            input_moves=tuple(FastMove(m, ledger, app, plan) for m in plan.input_moves),
            steps=steps,
            distinct_servers=tuple(dict.fromkeys(step.server for step in steps)),
            holders=plan.holders,
        )

    def run(self) -> RunRecord:
        """Run to the end: until no event is left, or until a battery runs out.

        Raises
        ------
        SimulationError
            When a request never completed though nothing was left to happen (a bug).
        RunFailedError
            When an exception escapes a component (see :func:`step_until`).
        """
        env, watch = self.env, self.watch
        seeds = np.random.SeedSequence(self.scenario.seed, spawn_key=(self.replicate,))
        start: Callable[[Request, float], None] = self.dataflow.start
        if self.failures is not None:  # a request's replica may be down when it arrives
            self.failures.schedule(start)
            start = self.failures.admit
        self.arrivals.start(seeds, start, watch_over=bool(watch.batteries))
        stopped_at_s, stop_reason = None, ""
        if watch.batteries:
            # a battery drains at idle forever: stop when it is empty or the work is over
            # (no more arrivals, nothing in flight, every radio back to idle)
            empty = simpy.events.AnyOf(env, [b.empty for b in watch.batteries.values()])
            over = self.arrivals.over
            assert over is not None  # watched: watch_over above
            self._step_until(simpy.events.AnyOf(env, [empty, over]))
            if empty.triggered:  # the run ends now; what was in flight is dropped
                stopped_at_s = env.now
                stop_reason = watch.stop(env.now, self.ledger)
        else:
            self._step_until(None)
        if stopped_at_s is None:
            unfinished = [
                r.rid for r in self.book.current() if r.finish_s is None and not r.drop_reason
            ]
            if unfinished:
                raise SimulationError(
                    f"requests never completed: {unfinished[:10]}{self.memory.stuck()}"
                )
        return RunRecord(
            ledger=self.ledger,
            requests=self.book,
            radios=tuple(self.network.radios),
            dvfs=self.dvfs,
            thermal=watch.thermal,
            batteries=watch.batteries,
            units=self.units,
            links=self.network.links,
            stopped_at_s=stopped_at_s,
            stop_reason=stop_reason,
            failures=tuple(self.failures.rows()) if self.failures is not None else (),
            down=self.down,
            memory_log=self.memory_log,
            handovers=self.handovers,
        )

    def _step_until(self, until: simpy.Event | None) -> None:
        """Run until ``until`` is processed or no event is left (:func:`step_until`)."""
        report = None
        if self.progress is not None:
            progress, book = self.progress, self.book
            report = lambda now: progress(now, book.issued, book.completed)  # noqa: E731
        step_until(self.env, until, self.scenario.name, report)
