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

import numpy as np
import simpy

from simulator.engine.book import RequestBook
from simulator.engine.dram import DramChannel
from simulator.engine.dram import Stream as DramStream
from simulator.engine.dvfs import DvfsState
from simulator.engine.fallback import Fallback
from simulator.engine.ledger import Ledger
from simulator.engine.links import FluidLink
from simulator.engine.loop import Progress, step_until
from simulator.engine.offload import AdaptiveApp
from simulator.engine.radio import RadioState
from simulator.engine.servers import Server, call_later
from simulator.engine.state import (
    DONE,
    RUNNING,
    App,
    FastMove,
    HopTrack,
    RadioRates,
    Replica,
    Request,
    fast_move,
)
from simulator.engine.watch import PowerWatch
from simulator.errors import SimulationError
from simulator.limits import MAX_REQUESTS
from simulator.network.impairments import impairments_for
from simulator.network.topology import BITS_PER_BYTE
from simulator.placement.plan import ExecutionPlan, Move
from simulator.platform import CostOracle, unit_id
from simulator.scheduling import DISPATCHERS, SCHEDULERS, ReplicaLoad
from simulator.spec.scenario import Scenario
from simulator.workload import AfterCompletion


class Engine(PowerWatch, Fallback):
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
        self.progress = progress
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
                    RadioRates(radios) if radios else None,
                    link.latency_s,
                    impairments_for(link, src, scenario.seed, replicate),
                )
        # each node's DRAM, shared by the ops its units run at once (finite bandwidth only)
        self.dram: dict[str, DramChannel] = {}
        for node in platform.nodes.values():
            if math.isfinite(node.dram_bps):
                channel = DramChannel(self.env, node.name, node.dram_bps)
                for unit in node.units:
                    self.dram[unit_id(node.name, unit.name)] = channel
        self.ledger = Ledger(platform, self.units, keep_rows)
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
                App(i, entry, replicas, DISPATCHERS.get(entry.dispatch).function, adaptive)
            )
            for replica in replicas:
                self.ledger.load_weights(replica.plan)
        self.requests = RequestBook(keep_records)
        self.monitors = [app.adaptive.monitor for app in self.apps if app.adaptive is not None]
        self._over: simpy.Event | None = None  # battery runs: the work is over
        self._link_seq = 0

    def _make_replica(self, index: int, plan: ExecutionPlan) -> Replica:
        platform = self.scenario.platform
        servers = tuple(self.units[uid] for uid in plan.units)
        return Replica(
            index=index,
            plan=plan,
            unit_servers=servers,
            on_device=tuple(platform.node_of(uid).role == "device" for uid in plan.units),
            input_moves=tuple(fast_move(m) for m in plan.input_moves),
            moves_out=tuple(tuple(fast_move(m) for m in moves) for moves in plan.moves_out),
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
            self._step_until(simpy.events.AnyOf(self.env, [empty, self._over]))
            if empty.triggered:
                self._stop_on_empty_battery()
                return
        else:
            self._step_until(None)
        unfinished = [
            r.rid for r in self.requests.current() if r.finish_s is None and not r.drop_reason
        ]
        if unfinished:
            raise SimulationError(f"requests never completed: {unfinished[:10]}")

    def _step_until(self, until: simpy.Event | None) -> None:
        """Run until ``until`` is processed or no event is left (:func:`step_until`)."""
        report = None
        if self.progress is not None:
            progress, book = self.progress, self.requests
            report = lambda now: progress(now, book.issued, book.completed)  # noqa: E731
        step_until(self.env, until, self.scenario.name, report)

    def _arrivals(self, app: App, rng: np.random.Generator, dispatch_rng: np.random.Generator):
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
            if self.requests.issued >= MAX_REQUESTS:  # a closed loop known only now
                raise SimulationError(
                    f"app '{entry.app}': more than {MAX_REQUESTS:,} requests in one run "
                    "(MAX_REQUESTS); lower count or duration_s"
                )
            self._start_request(app, env.now, dispatch_rng)
            app.issued += 1

    def _start_request(self, app: App, now: float, rng: np.random.Generator) -> None:
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
        request = Request(self.requests.issued, app, rep, now)
        self.requests.add(request)
        for move in rep.input_moves:
            self._start_move(request, move, now)

    # -- ops -------------------------------------------------------------------------------
    def _deliver(self, request: Request, i: int, now: float) -> None:
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

    def _op_start(self, payload, now: float) -> float | DramStream | None:
        request, i = payload
        if request.first_start_s is None:
            request.first_start_s = now
        plan = request.plan
        self.ledger.alloc(plan.units[i], plan.output_bytes[i], now)
        if request.phase is not None:
            request.phase[i] = RUNNING
        parts = plan.dvfs_parts[i]
        watch = self.unit_power.get(plan.units[i])
        if parts is None:
            if watch is not None:
                increment = watch[1] * plan.core_share[i]
                watch[0].changed(increment)
                self.running[(request.rid, i)] = (plan.units[i], now, increment, request)
            dram = plan.dram[i]
            if dram is None:
                return None
            fixed_s, nbytes = dram
            return self.dram[plan.units[i]].begin(now, plan.duration_s[i], fixed_s, nbytes)
        state = self.dvfs[plan.units[i]]
        level = state.decide(now)
        fixed_s, compute_s, memory_s = parts
        duration_s = state.table.op_time_at_level_s(compute_s, memory_s, fixed_s, level)
        state.record(now, now + duration_s)
        if request.op_energy is None:
            request.op_energy = [None] * plan.size
        busy_w = state.table.active_power_w(level)
        request.op_energy[i] = (busy_w * plan.core_share[i] * duration_s, level, busy_w, duration_s)
        if watch is not None:
            unit = self.scenario.platform.unit(plan.units[i])
            increment = (busy_w - unit.idle_w) * plan.core_share[i]
            watch[0].changed(increment)
            self.running[(request.rid, i)] = (plan.units[i], now, increment, request)
        dram = plan.dram[i]
        if dram is None or duration_s <= fixed_s:
            return duration_s
        return self.dram[plan.units[i]].begin(now, duration_s, fixed_s, dram[1])

    def _op_done(self, payload, start_s: float, end_s: float) -> None:
        request, i = payload
        rep = request.rep
        plan = request.plan
        at_level = request.op_energy[i] if request.op_energy is not None else None
        if at_level is not None:
            energy, level, busy_w, at_level_s = at_level
            stall_s = 0.0
            if plan.dram[i] is not None:  # the op lasted its time at the level + the stall
                stall_s = max(end_s - (start_s + at_level_s), 0.0)  # exact 0 unstalled
                if stall_s:
                    energy = busy_w * plan.core_share[i] * (end_s - start_s)
        else:
            energy, level = plan.energy_j[i], -1
            stall_s = 0.0
            if plan.dram[i] is not None:  # a stalled unit stays busy at active power
                stall_s = max(end_s - (start_s + plan.duration_s[i]), 0.0)
                if stall_s:
                    energy *= (end_s - start_s) / plan.duration_s[i]
        watch = self.unit_power.get(plan.units[i])
        if watch is not None:
            increment = self.running.pop((request.rid, i))[2]
            watch[0].changed(-increment)
        request.energy_j += energy
        if rep.on_device[i]:
            request.device_energy_j += energy
        self.ledger.op(request, i, start_s, end_s, energy, level, stall_s)
        if request.phase is not None:
            request.phase[i] = DONE
            if request.abandoned:  # the op ran (and drew power) for an attempt given up
                self.ledger.free(plan.units[i], plan.output_bytes[i], end_s)
                # the fallback attempt, if any (None: released, under trace none)
                current = self.requests.get(request.rid)
                if current is not None and current is not request:
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

    def _release_output(self, request: Request, i: int, now: float) -> None:
        request.holders[i] -= 1
        if request.holders[i] == 0:
            self.ledger.free(request.plan.units[i], request.plan.output_bytes[i], now)

    # -- tensor moves ----------------------------------------------------------------------
    def _start_move(self, request: Request, fast: FastMove, now: float) -> None:
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

    def _start_hop(self, request: Request, move: Move, k: int, now: float) -> None:
        hop = move.hops[k]
        self._link_seq += 1
        channel = self.links[(hop.link, hop.src)]
        radios = self.hop_radios[(hop.link, hop.src)]
        track = None
        if request.hops is not None:
            track = HopTrack((hop.link, hop.src), channel, radios, now)
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

    def _arrive(self, request: Request, move: Move, now: float) -> None:
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

    def _complete(self, request: Request, now: float) -> None:
        self.requests.complete(request, now)  # sets finish_s; releases it under trace none
        request.rep.in_flight -= 1
        # nothing reads a finished request's counters again; dropping them keeps the
        # garbage collector's passes short on long runs
        request.waits = request.ready_s = request.holders = request.inbufs = None
        request.op_energy = None  # (energy, level, power) of its DVFS ops: booked already
        self._free_slot(request.app)

    def _free_slot(self, app: App) -> None:
        """A request of ``app`` is over (done or dropped): a closed loop may issue again."""
        app.unconsumed += 1
        waiter = app.waiter
        if waiter is not None:
            app.waiter = None
            waiter.succeed()
        if self._over is not None:
            self._check_over()
