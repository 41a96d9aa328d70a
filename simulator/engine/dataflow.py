"""The engine's dataflow: a request's plan executed over units and links.

One job: move a request through its :class:`~simulator.placement.plan.ExecutionPlan`.
An op is queued on its unit's :class:`~simulator.engine.servers.Server` once every input
has arrived; when it ends, its successors on the unit are told and its tensors moved
(a plain delay on chip, hop by hop over the :class:`~simulator.engine.network.Network`
between nodes); the request completes when every output is back at its source. Buffers
are booked in the ledger from allocation to their last reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from heapq import heappush

import simpy
from simpy.events import NORMAL

from simulator.engine.book import RequestBook
from simulator.engine.dram import DramChannel
from simulator.engine.fallback import Fallback
from simulator.engine.ledger import Ledger
from simulator.engine.memory import MemoryGate
from simulator.engine.network import Network
from simulator.engine.offload import LinkMonitor
from simulator.engine.servers import PARKED, UnitServer, call_later
from simulator.engine.state import (
    DONE,
    RUNNING,
    App,
    FastMove,
    HopTrack,
    InBuf,
    InTransit,
    OpStep,
    Request,
)
from simulator.engine.stretched import stretched_energy, stretched_start
from simulator.engine.watch import PowerWatch
from simulator.errors import SimulationError
from simulator.hardware.dvfs_state import DvfsState
from simulator.network.topology import BITS_PER_BYTE
from simulator.scheduling import UnitScheduler


class Dataflow:
    """Executes requests' plans.

    Parameters
    ----------
    env : simpy.Environment
    key : UnitScheduler
        The run-time scheduler: the order a unit serves its queued ops in.
    dvfs : mapping of unit id -> DvfsState
        The DVFS units (the level is decided when an op starts).
    dram : mapping of unit id -> DramChannel
        The shared DRAM of the units on nodes whose bandwidth is finite.
    network : Network
    watch : PowerWatch
    ledger : Ledger
    book : RequestBook
    fallback : Fallback
        Gives an attempt up when one of its hops times out.
    monitors : sequence of LinkMonitor
        Told the throughput of every finished hop (adaptive apps).
    on_over : callable(App)
        A request of the app completed.

    Notes
    -----
    :class:`~simulator.engine.runtime.RuntimeDataflow` (run-time placement policies)
    overrides :meth:`start`, :meth:`_deliver` and :meth:`_op_done`. They run for every
    op, so the run-time decisions hook in there, in a subclass chosen once when the
    engine is built, not through a callback or a flag every run would test per op: a
    change to one of them is made in both.
    """

    def __init__(
        self,
        env: simpy.Environment,
        key: UnitScheduler,
        dvfs: Mapping[str, DvfsState],
        dram: Mapping[str, DramChannel],
        network: Network,
        watch: PowerWatch,
        ledger: Ledger,
        book: RequestBook,
        fallback: Fallback,
        monitors: Sequence[LinkMonitor],
        on_over: Callable[[App], None],
    ):
        self.env = env
        self.key = key
        # by_request schedulers: the key is a per-request part + the op's position
        self._request_part = getattr(key, "request_part", None)
        self.dvfs = dvfs
        self.dram = dram
        self.network = network
        self.watch = watch
        self.ledger = ledger
        self.book = book
        self.fallback = fallback
        self.monitors = monitors
        self.on_over = on_over
        self._on_arrival = [self._arrive]  # the callbacks of every tensor in transit
        #: starts a fallback attempt
        self.restart: Callable[[Request, float], None] = self.start
        #: nodes' memory pools: a request is let in at its first op start (None: no node
        #: has a pool)
        self.memory: MemoryGate | None = None

    def serve(self, servers: Iterable[UnitServer]) -> None:
        """Run ops on ``servers`` (the units): their jobs start and end here."""
        for server in servers:
            server.serve_with(self._op_start, self._op_done)

    def start(self, request: Request, now: float) -> None:
        """``request``'s input is at its source now: move it to its first ops."""
        if self._request_part is not None:
            request.key_part = self._request_part(
                request.rid, request.priority, request.deadline_at_s
            )
        for move in request.inputs:
            self._start_move(request, move, now)

    # -- ops -------------------------------------------------------------------------------
    def _deliver(self, request: Request, targets: tuple[int, ...], now: float) -> None:
        """An input of each op of ``targets`` is there now: queue each op on its unit once
        its last input is (an op listed twice gets two inputs)."""
        waits = request.waits
        for i in targets:
            left = waits[i] - 1
            waits[i] = left
            if left:
                if left < 0:
                    raise SimulationError(f"op {request.plan.ops[i]} delivered too often")
                continue
            # inputs arrive in time order: the op is ready when the last one is
            ready_s = request.ready_s[i]
            if now > ready_s:
                ready_s = request.ready_s[i] = now
            step = request.steps[i]
            part = request.key_part
            if part is not None:  # as the scheduler's key function, without a call
                key = part + step.key_tail
            else:
                key = self.key(request.rid, i, request.priority, request.deadline_at_s, ready_s)
            step.server.submit(key, step.duration_s, (request, i))

    def _op_start(self, payload, now: float) -> object:
        request, i = payload
        memory = self.memory
        if memory is not None and request.reserved is None and memory.parks(request):
            return PARKED  # it waits for room in a refusing pool (engine/memory.py)
        if request.first_start_s is None:
            request.first_start_s = now
        step = request.steps[i]
        # its output buffer is in use from now: ``step.tally.alloc(step.output_bytes)``
        # inlined (a call less per op)
        tally = step.tally
        in_use = tally.memory_bytes + step.output_bytes
        tally.memory_bytes = in_use
        if in_use > tally.peak_memory_bytes:
            tally.peak_memory_bytes = in_use
        if request.phase is not None:
            request.phase[i] = RUNNING
        if step.plain:  # its plan's duration, nothing else to tell
            return None
        state = step.dvfs
        if state is None:
            if step.watched is not None:
                increment = step.watched.increment_w * step.core_share
                self.watch.started(step.watched, step.uid, request, i, now, increment)
            if step.vary is not None:
                duration_s = step.duration_s
                real_s = step.vary.duration_s(now, duration_s)
                return stretched_start(step, request, i, now, duration_s, real_s, step.dram_fixed_s)
            if step.dram is None:
                return None
            return step.dram.begin(now, step.duration_s, step.dram_fixed_s, step.dram_bytes)
        vary = step.vary
        if vary is None:
            level = state.start(now, step.level_s)
        else:  # the governor notes the op busy for its real time at the level it picks
            factor = vary.factor()
            real = tuple(vary.real_s(now, time_s, factor) for time_s in step.level_s)
            level = state.start(now, real)
        duration_s = step.level_s[level]
        if request.levels is None:
            request.levels = [0] * len(request.steps)
        request.levels[i] = level
        if step.watched is not None:
            increment = (state.busy_w[level] - step.watched.idle_w) * step.core_share
            self.watch.started(step.watched, step.uid, request, i, now, increment)
        if vary is not None:
            return stretched_start(step, request, i, now, duration_s, real[level], step.fixed_s)
        if step.dram is None or duration_s <= step.fixed_s:
            return duration_s
        return step.dram.begin(now, duration_s, step.fixed_s, step.dram_bytes)

    def _op_done(self, payload, start_s: float, end_s: float) -> None:
        request, i = payload
        step = request.steps[i]
        if step.plain:  # the plan's energy, at no level, never stalled
            energy, level, stall_s = step.energy_j, -1, 0.0
        else:
            energy, level, stall_s = self._op_energy(step, request, i, start_s, end_s)
        request.energy_j += energy
        if step.on_device:
            request.device_energy_j += energy
        self.ledger.op(step, request, i, start_s, end_s, energy, level, stall_s)
        if request.phase is not None:
            request.phase[i] = DONE
            if request.abandoned:  # the op ran (and drew power) for an attempt given up
                step.tally.memory_bytes -= step.output_bytes
                if request.reserved is not None and self.memory is not None:
                    self.memory.release_op(request, step.uid, step.output_bytes)
                # the fallback attempt, if any (None: released, under trace none)
                current = self.book.get(request.rid)
                if current is not None and current is not request:
                    current.energy_j += energy
                    current.device_energy_j += energy if step.on_device else 0.0
                return
        # buffers whose last reader this op was are freed (memory in use drops)
        holders = request.holders
        if holders[i] == 0:
            step.tally.memory_bytes -= step.output_bytes
        for p in step.local_inputs:
            holders[p] -= 1
            if holders[p] == 0:
                producer = request.steps[p]
                producer.tally.memory_bytes -= producer.output_bytes
        bufs = request.inbufs[i]
        if bufs is not None:
            request.inbufs[i] = None  # let finished requests' buffers be collected early
            for buf in bufs:
                buf.readers -= 1
                if buf.readers == 0:
                    buf.tally.memory_bytes -= buf.nbytes
        if step.local_next:
            self._deliver(request, step.local_next, end_s)
        for move in step.moves_out:
            self._start_move(request, move, end_s)

    def _op_energy(
        self, step: OpStep, request: Request, i: int, start_s: float, end_s: float
    ) -> tuple[float, int, float]:
        """(energy J, level or -1, DRAM stall s) of an op that is not plain (DVFS, shared
        DRAM or a watched node), which ran over ``[start_s, end_s]``."""
        stall_s = 0.0
        if step.vary is not None:  # its busy power over its real time (engine/stretched.py)
            booked = stretched_energy(step, request, i, start_s, end_s)
            if step.watched is not None:
                self.watch.ended(step.watched, request, i)
            return booked
        if step.dvfs is not None:
            # set when the op started (a DVFS op notes its level): no None test per op
            level = request.levels[i]  # type: ignore[index]
            energy = step.level_j[level]
            if step.dram is not None:  # the op lasted its time at the level + the stall
                stall_s = max(end_s - (start_s + step.level_s[level]), 0.0)  # exact 0 unstalled
                if stall_s:
                    energy = step.dvfs.busy_w[level] * step.core_share * (end_s - start_s)
        else:
            energy, level = step.energy_j, -1
            if step.dram is not None:  # a stalled unit stays busy at active power
                stall_s = max(end_s - (start_s + step.duration_s), 0.0)
                if stall_s:
                    energy *= (end_s - start_s) / step.duration_s
        if step.watched is not None:
            self.watch.ended(step.watched, request, i)
        return energy, level, stall_s

    # -- tensor moves ----------------------------------------------------------------------
    def _start_move(self, request: Request, fast: FastMove, now: float) -> None:
        delay_s = fast.delay_s
        if delay_s is None:
            self._start_hop(request, fast, 0, now)
            return
        if fast.books:
            self.ledger.move(request, fast, now, now + delay_s)
        if delay_s > 0:
            # ``wake(self.env, delay_s, InTransit(...), self._on_arrival)`` inlined: a call
            # less per move
            transit = InTransit(request, fast)
            transit.callbacks = self._on_arrival
            env = self.env
            # (a record, not a simpy Event: as clock.wake's, SimPy's loop takes it)
            heappush(env._queue, (env._now + delay_s, NORMAL, next(env._eid), transit))  # type: ignore[misc]
        else:
            self._arrive(InTransit(request, fast))

    def _start_hop(self, request: Request, fast: FastMove, k: int, now: float) -> None:
        move = fast.move
        hop = move.hops[k]
        direction = (hop.link, hop.src)
        track = None
        if request.hops is not None:
            track = HopTrack(
                direction, self.network.links[direction], self.network.hop_radios[direction], now
            )
            request.hops[track] = None
            timeout_s = request.app.entry.transfer_timeout_s
            if timeout_s is not None and not request.fell_back:  # else tracked to be undone
                call_later(self.env, timeout_s, lambda: self._timed_out(request, track))
        # a download's hop is queued when its first bytes reach the device (docs/energy.md)
        payload = (request, fast, k, now + self.network.lead_s[direction], track)
        self.network.send(
            direction, move.nbytes, self._hop_done, payload, track, lambda: request.abandoned
        )

    def _timed_out(self, request: Request, track: HopTrack) -> None:
        now = self.env.now
        again = self.fallback.timeout(request, track, now)
        if again is not None:
            self.restart(again, now)

    def _hop_done(self, payload, start_s: float, end_s: float, delay_s: float) -> None:
        request, fast, k, queued_s, track = payload
        move = fast.move
        hop = move.hops[k]
        self.network.release((hop.link, hop.src))
        if track is not None:
            request.hops.pop(track, None)
        if self.monitors and end_s > start_s:
            bps = move.nbytes * BITS_PER_BYTE / (end_s - start_s)
            for monitor in self.monitors:
                monitor.sample((hop.link, hop.src), bps, end_s)
        energy, device_energy = self.ledger.hop(request, fast, k, queued_s, start_s, end_s, delay_s)
        request.energy_j += energy
        request.device_energy_j += device_energy
        last = k + 1 == len(move.hops)

        def propagated() -> None:
            if request.abandoned:
                return
            if last:
                self._arrive(InTransit(request, fast))
            else:
                self._start_hop(request, fast, k + 1, self.env.now)

        call_later(self.env, delay_s, propagated)  # latency (+ jitter, retransmissions)

    def _arrive(self, transit: InTransit) -> None:
        """A tensor reached its unit (or, an output, the request's source) now."""
        request, fast = transit.request, transit.fast
        if request.abandoned:
            return
        now = self.env._now
        move = fast.move
        src = fast.holder
        if src is not None:  # the copy has left: the producer's (a view's owner's) buffer may go
            holders = request.holders
            holders[src] -= 1
            if holders[src] == 0:
                producer = request.steps[src]
                producer.tally.memory_bytes -= producer.output_bytes
        if move.dst_unit is None:
            request.outputs_left -= 1
            if request.outputs_left == 0:
                self._complete(request, now)
            return
        if move.consumers:
            tally = fast.tally
            assert tally is not None  # a move with consumers ends on a unit
            buf = InBuf(len(move.consumers), move.nbytes, tally)
            memory = self.memory  # a node's pool books it when its request is let in
            if memory is None or request.reserved is not None or not memory.hold(request, buf):
                in_use = tally.memory_bytes + move.nbytes  # ``tally.alloc`` inlined: a call less
                tally.memory_bytes = in_use
                if in_use > tally.peak_memory_bytes:
                    tally.peak_memory_bytes = in_use
            inbufs = request.inbufs
            for j in move.consumers:
                held = inbufs[j]
                if held is None:
                    inbufs[j] = [buf]
                else:
                    held.append(buf)
            self._deliver(request, move.consumers, now)

    def _complete(self, request: Request, now: float) -> None:
        if request.reserved is not None and self.memory is not None:
            self.memory.release(request)
        self.book.complete(request, now)  # sets finish_s; releases it under trace none
        request.rep.in_flight -= 1
        # nothing reads a finished request's counters again; dropping them keeps the
        # garbage collector's passes short on long runs. ignore: typed without None so the
        # per-op code, which reads them only in flight, needs no None test (state.Request)
        request.waits = request.ready_s = request.holders = request.inbufs = None  # type: ignore[assignment]
        request.levels = request.stretched_s = None  # each op's level and time: booked already
        self.on_over(request.app)
