"""The engine: executes a scenario's request streams over their execution plans.

This is the only module family that imports SimPy. Units are
:class:`~simulator.engine.servers.Server` s, link directions are
:class:`~simulator.engine.links.FluidLink` s and device radios
:class:`~simulator.engine.radio.RadioState` s; a request is a set of counters over its
plan; ops are jobs on units, tensor moves are flows on links (or plain delays on chip).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import simpy

from simulator.engine.dvfs import DvfsState
from simulator.engine.ledger import Ledger
from simulator.engine.links import FluidLink
from simulator.engine.offload import AdaptiveApp
from simulator.engine.power import Battery, NodePower
from simulator.engine.radio import RadioState
from simulator.engine.servers import Server, call_later
from simulator.engine.thermal import NodeThermal
from simulator.errors import SimulationError
from simulator.network.impairments import impairments_for
from simulator.network.topology import BITS_PER_BYTE
from simulator.placement.plan import ExecutionPlan, Move
from simulator.platform import CostOracle
from simulator.scheduling import DISPATCHERS, NO_DEADLINE, SCHEDULERS, Dispatcher, ReplicaLoad
from simulator.spec.scenario import Scenario
from simulator.workload import AfterCompletion, WorkloadEntry

#: A move with what the hot path needs precomputed: (move, fixed delay or None for a
#: network move, whether it books a transfer row).
_FastMove = tuple[Move, float | None, bool]


#: phases of an op in a tracked request (one whose app may time out)
_WAITING, _RUNNING, _DONE = 0, 1, 2


def _fast(move: Move) -> _FastMove:
    return (move, None if move.hops else move.fixed_delay_s, move.transfer.kind != "local")


class _RadioRates:
    """Tells a link direction's radios its throughput in use (their power follows it)."""

    __slots__ = ("_bps", "_radios")

    def __init__(self, radios):
        self._radios = radios
        self._bps = 0.0

    def __call__(self, total_bps: float) -> None:
        delta, self._bps = total_bps - self._bps, total_bps
        for radio, sending in self._radios:
            radio.flow(delta if sending else 0.0, 0.0 if sending else delta)


class _Hop:
    """A tracked hop of a request whose app may time out: where it is, to undo it."""

    __slots__ = ("channel", "direction", "flow", "radios", "submitted_s")

    def __init__(self, direction, channel: FluidLink, radios, submitted_s: float):
        self.direction = direction  # (link, src node)
        self.channel = channel
        self.radios = radios
        self.submitted_s = submitted_s
        self.flow = None  # set once every radio is connected and the flow is on the link


class _Request:
    __slots__ = (
        "abandoned",
        "app",
        "arrival_s",
        "deadline_at_s",
        "device_energy_j",
        "drop_reason",
        "energy_j",
        "fell_back",
        "finish_s",
        "first_start_s",
        "holders",
        "hops",
        "inbufs",
        "op_energy",
        "outputs_left",
        "phase",
        "plan",
        "ready_s",
        "rep",
        "rid",
        "waits",
    )

    def __init__(self, rid: int, app: _App, rep: _Replica, arrival_s: float):
        plan = rep.plan
        self.rid = rid
        self.app = app
        self.rep = rep
        self.plan = plan
        self.arrival_s = arrival_s
        deadline = app.entry.deadline_s
        self.deadline_at_s = arrival_s + deadline if deadline is not None else NO_DEADLINE
        self.waits = list(plan.waits)
        self.ready_s = [arrival_s] * plan.size
        self.holders = list(plan.holders)
        self.inbufs: list[list | None] = [None] * plan.size
        self.op_energy: list | None = None  # (energy, DVFS level) of ops on DVFS units
        self.outputs_left = plan.n_outputs
        self.first_start_s = None
        self.finish_s = None
        self.energy_j = 0.0
        self.device_energy_j = 0.0
        self.abandoned = False
        self.fell_back = False
        self.drop_reason = ""
        # only requests that may time out track their hops and op phases (to undo them)
        tracked = app.entry.transfer_timeout_s is not None
        self.hops: set[_Hop] | None = set() if tracked else None
        self.phase: list[int] | None = [0] * plan.size if tracked else None


@dataclass
class _Replica:
    """One placement of an app, with what the hot path needs precomputed."""

    index: int
    plan: ExecutionPlan
    unit_servers: tuple[Server, ...]
    on_device: tuple[bool, ...]
    input_moves: tuple[_FastMove, ...]
    moves_out: tuple[tuple[_FastMove, ...], ...]
    distinct_servers: tuple[Server, ...]
    in_flight: int = 0


@dataclass
class _App:
    index: int
    entry: WorkloadEntry
    replicas: tuple[_Replica, ...]
    dispatcher: Dispatcher
    adaptive: AdaptiveApp | None = None
    issued: int = 0
    unconsumed: int = 0
    waiter: simpy.Event | None = None


class Engine:
    """One replicate of a scenario.

    Parameters
    ----------
    scenario : Scenario
    plans : dict of app name -> ExecutionPlan, or -> tuple of plans (one per replica)
    oracle : CostOracle
    replicate : int
        Replicate index; random streams are spawned from (seed, replicate, app).
    """

    def __init__(
        self,
        scenario: Scenario,
        plans: Mapping[str, ExecutionPlan | tuple[ExecutionPlan, ...]],
        oracle: CostOracle,
        replicate: int = 0,
    ):
        self.scenario = scenario
        self.oracle = oracle
        self.replicate = replicate
        self.env = simpy.Environment()
        self.key = SCHEDULERS.get(scenario.scheduler).function
        self.dvfs = {
            uid: DvfsState(scenario.platform.unit(uid))
            for uid in scenario.platform.unit_ids
            if scenario.platform.unit(uid).dvfs is not None
        }

        platform = scenario.platform
        self.units = {
            uid: Server(self.env, uid, platform.unit(uid).slots) for uid in platform.unit_ids
        }
        # the device-end radios of every link, and which of them each direction uses
        self.radios: list[RadioState] = []
        self.hop_radios: dict[tuple[str, str], tuple[tuple[RadioState, bool], ...]] = {}
        for link in platform.network.links.values():
            ends = {}
            if link.radio is not None:
                for end in (link.a, link.b):
                    if platform.role_of(end) == "device":
                        ends[end] = RadioState(self.env, link.name, end, link.radio)
                        self.radios.append(ends[end])
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                self.hop_radios[(link.name, src)] = tuple(
                    (ends[n], n == src) for n in (src, dst) if n in ends
                )
        self.links: dict[tuple[str, str], FluidLink] = {}
        for link in platform.network.links.values():
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                radios = self.hop_radios[(link.name, src)]
                self.links[(link.name, src)] = FluidLink(
                    self.env,
                    f"{link.name}:{src}->{dst}",
                    link.capacity_steps(src),
                    link.sharing,
                    _RadioRates(radios) if radios else None,
                    link.latency_s,
                    impairments_for(link, src, scenario.seed, replicate),
                )
        self.ledger = Ledger(platform, self.units)
        self._watch_power(platform)
        self.apps = []
        for i, entry in enumerate(scenario.workload):
            mine = plans[entry.app]
            mine = (mine,) if isinstance(mine, ExecutionPlan) else tuple(mine)
            replicas = tuple(self._make_replica(k, plan) for k, plan in enumerate(mine))
            adaptive = (
                AdaptiveApp(entry.app, entry.adaptive, mine, oracle, entry.transfer_timeout_s)
                if entry.adaptive is not None
                else None
            )
            self.apps.append(
                _App(i, entry, replicas, DISPATCHERS.get(entry.dispatch).function, adaptive)
            )
            for replica in replicas:
                self.ledger.load_weights(replica.plan)
        self.requests: list[_Request] = []
        self.monitors = [app.adaptive.monitor for app in self.apps if app.adaptive is not None]
        self._over: simpy.Event | None = None  # battery runs: the work is over
        self._link_seq = 0

    def _make_replica(self, index: int, plan: ExecutionPlan) -> _Replica:
        platform = self.scenario.platform
        servers = tuple(self.units[uid] for uid in plan.units)
        return _Replica(
            index=index,
            plan=plan,
            unit_servers=servers,
            on_device=tuple(platform.node_of(uid).role == "device" for uid in plan.units),
            input_moves=tuple(_fast(m) for m in plan.input_moves),
            moves_out=tuple(tuple(_fast(m) for m in moves) for moves in plan.moves_out),
            distinct_servers=tuple(dict.fromkeys(servers)),
        )

    # -- running ---------------------------------------------------------------------------
    def run(self) -> None:
        seeds = np.random.SeedSequence(self.scenario.seed, spawn_key=(self.replicate,))
        self._sources = []
        for app, child in zip(self.apps, seeds.spawn(len(self.apps)), strict=True):
            arrivals, dispatch = (np.random.default_rng(s) for s in child.spawn(2))
            self._sources.append(self.env.process(self._arrivals(app, arrivals, dispatch)))
        if self.batteries:
            # a battery drains at idle forever: stop when it is empty or the work is over
            # (no more arrivals, nothing in flight, every radio back to idle)
            self._over = self.env.event()
            for source in self._sources:
                source.callbacks.append(lambda _event: self._check_over())
            for radio in self.radios:
                radio.on_idle = self._check_over
            empty = simpy.events.AnyOf(self.env, [b.empty for b in self.batteries.values()])
            try:
                self.env.run(until=simpy.events.AnyOf(self.env, [empty, self._over]))
            except RuntimeError:  # every event processed and no battery ran out
                pass
            else:
                if empty.triggered:
                    self._stop_on_empty_battery()
                    return
        else:
            self.env.run()
        unfinished = [r.rid for r in self.requests if r.finish_s is None and not r.drop_reason]
        if unfinished:
            raise SimulationError(f"requests never completed: {unfinished[:10]}")

    def _watch_power(self, platform) -> None:
        """Node power for the nodes whose thermal model or battery listens to it."""
        self.thermal: dict[str, NodeThermal] = {}
        self.batteries: dict[str, Battery] = {}
        self.unit_power: dict[str, tuple[NodePower, float]] = {}
        self.running: dict[tuple[int, int], tuple[str, float, float]] = {}
        self.stopped_at_s: float | None = None
        self.stop_reason = ""
        for node in platform.nodes.values():
            if node.thermal is None and node.battery_j is None:
                continue
            radios = [r for r in self.radios if r.node == node.name]
            power = NodePower(sum(u.idle_w for u in node.units) + sum(r.power_w() for r in radios))
            if node.thermal is not None:
                caps = [
                    (self.dvfs[f"{node.name}.{u.name}"], u.throttled_max_hz or 0.0)
                    for u in node.units
                    if u.dvfs is not None
                ]
                self.thermal[node.name] = NodeThermal(
                    self.env, node.name, node.thermal, power.power_w, caps
                )
                power.listeners.append(self.thermal[node.name])
            if node.battery_j is not None:
                self.batteries[node.name] = Battery(
                    self.env, node.name, node.battery_j, power.power_w
                )
                power.listeners.append(self.batteries[node.name])
            for u in node.units:
                self.unit_power[f"{node.name}.{u.name}"] = (power, u.active_w - u.idle_w)
            for radio in radios:
                radio.power_listener = power

    def _stop_on_empty_battery(self) -> None:
        """A battery ran out: the run ends now; what was in flight is dropped."""
        now = self.env.now
        self.stopped_at_s = now
        empty = sorted(n for n, b in self.batteries.items() if b.empty.triggered)
        self.stop_reason = f"battery of {', '.join(empty)} empty at {now:.6g} s"
        for (rid, i), (uid, start_s, _) in self.running.items():
            request = self.requests[rid]
            plan = request.plan
            at_level = request.op_energy[i] if request.op_energy is not None else None
            busy_w = (
                at_level[2] if at_level is not None else self.scenario.platform.unit(uid).active_w
            )
            self.ledger.partial_op(uid, start_s, now, plan.core_share[i], busy_w)

    def _arrivals(self, app: _App, rng: np.random.Generator, dispatch_rng: np.random.Generator):
        env = self.env
        entry = app.entry
        limit = entry.count
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
            else:
                if entry.duration_s is not None and item > entry.duration_s:
                    return
                if item > env.now:
                    yield env.timeout(item - env.now)
            if entry.duration_s is not None and env.now > entry.duration_s:
                return
            self._start_request(app, env.now, dispatch_rng)
            app.issued += 1

    def _start_request(self, app: _App, now: float, rng: np.random.Generator) -> None:
        replicas = app.replicas
        if len(replicas) == 1:
            rep = replicas[0]
        else:
            predicted = self._predict(app, now) if app.adaptive is not None else None
            loads = [
                ReplicaLoad(
                    r.in_flight,
                    sum(s.backlog_s for s in r.distinct_servers),
                    predicted[r.index] if predicted is not None else math.nan,
                )
                for r in replicas
            ]
            rep = replicas[app.dispatcher(loads, app.issued, rng)]
        rep.in_flight += 1
        request = _Request(len(self.requests), app, rep, now)
        self.requests.append(request)
        for move in rep.input_moves:
            self._start_move(request, move, now)

    # -- ops -------------------------------------------------------------------------------
    def _deliver(self, request: _Request, i: int, now: float) -> None:
        request.waits[i] -= 1
        if now > request.ready_s[i]:
            request.ready_s[i] = now
        if request.waits[i] == 0:
            plan = request.plan
            key = self.key(
                request.rid,
                i,
                request.app.entry.priority,
                request.deadline_at_s,
                request.ready_s[i],
            )
            request.rep.unit_servers[i].submit(
                key, (plan.duration_s[i], self._op_start, self._op_done, (request, i))
            )
        elif request.waits[i] < 0:
            raise SimulationError(f"op {request.plan.ops[i]} delivered too often")

    def _op_start(self, payload, now: float) -> float | None:
        request, i = payload
        if request.first_start_s is None:
            request.first_start_s = now
        plan = request.plan
        self.ledger.alloc(plan.units[i], plan.output_bytes[i], now)
        if request.phase is not None:
            request.phase[i] = _RUNNING
        parts = plan.dvfs_parts[i]
        watch = self.unit_power.get(plan.units[i])
        if parts is None:
            if watch is not None:
                increment = watch[1] * plan.core_share[i]
                watch[0].changed(increment)
                self.running[(request.rid, i)] = (plan.units[i], now, increment)
            return None
        state = self.dvfs[plan.units[i]]
        level = state.decide(now)
        fixed_s, compute_s, memory_s = parts
        duration_s = state.table.op_time_at_level_s(compute_s, memory_s, fixed_s, level)
        state.record(now, now + duration_s)
        if request.op_energy is None:
            request.op_energy = [None] * plan.size
        busy_w = state.table.active_power_w(level)
        request.op_energy[i] = (busy_w * plan.core_share[i] * duration_s, level, busy_w)
        if watch is not None:
            unit = self.scenario.platform.unit(plan.units[i])
            increment = (busy_w - unit.idle_w) * plan.core_share[i]
            watch[0].changed(increment)
            self.running[(request.rid, i)] = (plan.units[i], now, increment)
        return duration_s

    def _op_done(self, payload, start_s: float, end_s: float) -> None:
        request, i = payload
        rep = request.rep
        plan = request.plan
        at_level = request.op_energy[i] if request.op_energy is not None else None
        energy, level = at_level[:2] if at_level is not None else (plan.energy_j[i], -1)
        watch = self.unit_power.get(plan.units[i])
        if watch is not None:
            _, _, increment = self.running.pop((request.rid, i))
            watch[0].changed(-increment)
        request.energy_j += energy
        if rep.on_device[i]:
            request.device_energy_j += energy
        self.ledger.op(request, i, start_s, end_s, energy, level)
        if request.phase is not None:
            request.phase[i] = _DONE
            if request.abandoned:  # the op ran (and drew power) for an attempt given up
                self.ledger.free(plan.units[i], plan.output_bytes[i], end_s)
                current = self.requests[request.rid]  # the fallback attempt, if any
                if current is not request:
                    current.energy_j += energy
                    current.device_energy_j += energy if rep.on_device[i] else 0.0
                return
        if request.holders[i] == 0:
            self.ledger.free(plan.units[i], plan.output_bytes[i], end_s)
        for p in plan.local_inputs[i]:
            self._release_output(request, p, end_s)
        bufs = request.inbufs[i]
        if bufs is not None:
            request.inbufs[i] = None  # let finished requests' buffers be collected early
            for buf in bufs:
                buf[0] -= 1
                if buf[0] == 0:
                    self.ledger.free(buf[2], buf[1], end_s)
        for j in plan.local_next[i]:
            self._deliver(request, j, end_s)
        for move in rep.moves_out[i]:
            self._start_move(request, move, end_s)

    def _release_output(self, request: _Request, i: int, now: float) -> None:
        request.holders[i] -= 1
        if request.holders[i] == 0:
            self.ledger.free(request.plan.units[i], request.plan.output_bytes[i], now)

    # -- tensor moves ----------------------------------------------------------------------
    def _start_move(self, request: _Request, fast: _FastMove, now: float) -> None:
        move, delay_s, books = fast
        if delay_s is None:
            self._start_hop(request, move, 0, now)
            return
        if books:
            self.ledger.move(request, move, now, now + delay_s)
        if delay_s > 0:
            env = self.env
            env.timeout(delay_s).callbacks.append(lambda _e: self._arrive(request, move, env.now))
        else:
            self._arrive(request, move, now)

    def _start_hop(self, request: _Request, move: Move, k: int, now: float) -> None:
        hop = move.hops[k]
        self._link_seq += 1
        channel = self.links[(hop.link, hop.src)]
        radios = self.hop_radios[(hop.link, hop.src)]
        track = None
        if request.hops is not None:
            track = _Hop((hop.link, hop.src), channel, radios, now)
            request.hops.add(track)
            call_later(
                self.env,
                request.app.entry.transfer_timeout_s,
                lambda: self._timeout(request, track),
            )
        payload = (request, move, k, now, track)
        if not radios:
            flow = channel.submit(move.nbytes * BITS_PER_BYTE, None, self._hop_done, payload)
            if track is not None:
                track.flow = flow
            return
        pending = [len(radios)]

        def connected() -> None:  # every device radio on the hop is ready (promoted)
            pending[0] -= 1
            if pending[0]:
                return
            if request.abandoned:  # given up while the radios woke: let them go
                for radio, _ in radios:
                    radio.release()
                return
            flow = channel.submit(move.nbytes * BITS_PER_BYTE, None, self._hop_done, payload)
            if track is not None:
                track.flow = flow

        for radio, _ in radios:
            radio.connect(connected)

    def _hop_done(self, payload, start_s: float, end_s: float, delay_s: float) -> None:
        request, move, k, queued_s, track = payload
        hop = move.hops[k]
        for radio, _ in self.hop_radios[(hop.link, hop.src)]:
            radio.release()
        if track is not None:
            request.hops.discard(track)
        if self.monitors and end_s > start_s:
            bps = move.nbytes * BITS_PER_BYTE / (end_s - start_s)
            for monitor in self.monitors:
                monitor.sample((hop.link, hop.src), bps, end_s)
        energy, device_energy = self.ledger.hop(request, move, k, queued_s, start_s, end_s, delay_s)
        request.energy_j += energy
        request.device_energy_j += device_energy
        last = k + 1 == len(move.hops)

        def propagated() -> None:
            if request.abandoned:
                return
            if last:
                self._arrive(request, move, self.env.now)
            else:
                self._start_hop(request, move, k + 1, self.env.now)

        call_later(self.env, delay_s, propagated)  # latency (+ jitter, retransmissions)

    def _arrive(self, request: _Request, move: Move, now: float) -> None:
        if request.abandoned:
            return
        if move.src_op is not None:  # the copy has left: the producer's buffer may go
            self._release_output(request, move.src_op, now)
        if move.dst_unit is None:
            request.outputs_left -= 1
            if request.outputs_left == 0:
                self._complete(request, now)
            return
        if move.consumers:
            buf = [len(move.consumers), move.nbytes, move.dst_unit]
            self.ledger.alloc(move.dst_unit, move.nbytes, now)
            for j in move.consumers:
                if request.inbufs[j] is None:
                    request.inbufs[j] = []
                request.inbufs[j].append(buf)
            for j in move.consumers:
                self._deliver(request, j, now)

    def _complete(self, request: _Request, now: float) -> None:
        request.finish_s = now
        request.rep.in_flight -= 1
        # nothing reads a finished request's counters again; dropping them keeps the
        # garbage collector's passes short on long runs
        request.waits = request.ready_s = request.holders = request.inbufs = None
        self._free_slot(request.app)

    def _free_slot(self, app: _App) -> None:
        """A request of ``app`` is over (done or dropped): a closed loop may issue again."""
        app.unconsumed += 1
        waiter = app.waiter
        if waiter is not None:
            app.waiter = None
            waiter.succeed()
        if self._over is not None:
            self._check_over()

    def _check_over(self) -> None:
        """Trigger :attr:`_over` once nothing more can happen but idling."""
        if self._over.triggered or any(source.is_alive for source in self._sources):
            return
        if any(rep.in_flight for app in self.apps for rep in app.replicas):
            return
        if any(radio.busy for radio in self.radios):
            return
        self._over.succeed()

    # -- adaptive offloading -------------------------------------------------------------------
    def _predict(self, app: _App, now: float) -> list[float]:
        """Every candidate's objective for a request arriving now, as the app observes it."""
        backlog = {uid: server.backlog_s for uid, server in self.units.items()}
        tails = {(r.link, r.node): r.released_ago_s(now) for r in self.radios}
        awake = {key: ago for key, ago in tails.items() if ago is not None}
        live = {key: c.throughput_bps for key, c in self.links.items() if c.flows}
        return app.adaptive.predict(now, backlog, awake, live)

    def _timeout(self, request: _Request, track: _Hop) -> None:
        if request.abandoned or track not in request.hops:
            return  # the hop made it (or the attempt was already given up)
        now = self.env.now
        flow = track.flow
        link, src = track.direction
        reason = (
            f"a hop on link '{link}' from '{src}' was unfinished after "
            f"{request.app.entry.transfer_timeout_s * 1e3:g} ms"
        )
        self._abandon(request, now, reason)  # cancels the flow: its bits sent are final
        sent = flow.bits_total - max(flow.bits_left, 0.0) if flow is not None else 0.0
        # what the link delivered to this hop since it was submitted (~0 while it is down)
        for monitor in self.monitors:
            monitor.sample(track.direction, sent / (now - track.submitted_s), now)

    def _abandon(self, request: _Request, now: float, reason: str) -> None:
        """Give up the request's attempt: restart it on the fallback, or drop it.

        Undoes what the attempt holds: flows on links (and their radio reservations),
        queued ops, buffers in memory. Ops already running finish (no preemption) and
        their energy stays booked to the request. An adaptive app restarts the request
        from its input on its fallback replica; any other app drops it with ``reason``.
        """
        request.abandoned = True
        for track in request.hops:
            if track.flow is not None:
                track.channel.cancel(track.flow)
                for radio, _ in track.radios:
                    radio.release()
            # else: the radios are still waking; ``connected`` releases them
        request.hops.clear()
        for server in request.rep.distinct_servers:
            server.cancel(lambda payload: payload[0] is request)
        plan = request.plan
        for i, phase in enumerate(request.phase):
            if phase == _DONE and request.holders[i] > 0:
                self.ledger.free(plan.units[i], plan.output_bytes[i], now)
        seen = set()
        for bufs in request.inbufs:
            for buf in bufs or ():
                if id(buf) not in seen and buf[0] > 0:
                    self.ledger.free(buf[2], buf[1], now)
                seen.add(id(buf))
                buf[0] = 0
        request.rep.in_flight -= 1
        app = request.app
        if app.adaptive is None:
            request.drop_reason = reason
            self._free_slot(app)
            return
        again = _Request(request.rid, app, app.replicas[app.adaptive.fallback], request.arrival_s)
        again.hops = again.phase = None  # the fallback runs to the end, whatever it takes
        again.fell_back = True
        again.first_start_s = request.first_start_s
        again.energy_j = request.energy_j
        again.device_energy_j = request.device_energy_j
        again.rep.in_flight += 1
        self.requests[request.rid] = again
        for move in again.rep.input_moves:
            self._start_move(again, move, now)
