"""The engine's hook for run-time per-op schedulers (DS3's MET, EFT, ETF, STF, ETF_LB).

An app placed by a run-time policy (:mod:`simulator.placement.runtime`) has no fixed
map: each op's unit is decided when the op becomes ready (every predecessor has
finished; an entry op at the request's arrival). Ops that become ready at the same
instant are decided together (one zero-delay event per instant, after the events
already due then), in request then op order, by the policy's pure rule given a
read-only snapshot: per candidate unit the op's time and when its inputs would be
there, and per unit when it is expected free, whether it is idle, and how many ops it
was given. The engine then moves the inputs and queues the op on its unit, whose
scheduler key uses the decision order in place of the op's position (a unit serves a
request's ops in the order they were decided, as DS3's executable queue does).

Inputs move as DS3's PE-to-PE model has them:

* a fixed-delay copy (on chip, or an edge's explicit ``comm_ms``) counts from the
  producer's end, so an op decided later waits only what is left of it (the data is
  written out as the producer ends);
* a transfer over network links starts when the consumer's unit is decided (its route
  is known only then) and shares the links like any transfer; the rule's estimate
  for it is its contention-free time from now plus the time the bits still queued on
  each of its link directions take at the hop's bandwidth (the links' state);
* each edge moves on its own (no sharing of one copy between consumers); a consumer on
  the producer's unit reads the buffer in place.

Not supported with a run-time policy (rejected when the engine is built): transfer
timeouts, adaptive dispatch and failures. Weights stay booked where the provisional plan
(each op on its fastest unit) puts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from simulator.engine.clock import after, wake
from simulator.engine.dataflow import Dataflow
from simulator.engine.runtime_tables import MakeStep, RequestState, RuntimeApp
from simulator.engine.servers import Server
from simulator.engine.state import App, InTransit, Request
from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.runtime import ReadyOp, RuntimeRule, UnitsView, runtime_rule
from simulator.platform import CostOracle


def uses_runtime(apps: Sequence[App]) -> bool:
    """Whether any replica of ``apps`` defers its ops' units to a run-time rule."""
    return any(runtime_rule(r.plan.placement) is not None for a in apps for r in a.replicas)


class RuntimeDataflow(Dataflow):
    """:class:`Dataflow` that decides the ops of run-time apps as they become ready
    (used only when some app has a run-time placement: others run as before)."""

    def prepare(
        self,
        apps: Sequence[App],
        servers: Mapping[str, Server],
        oracle: CostOracle,
        graphs: Mapping[str, ModelGraph],
        make_step: MakeStep,
    ) -> None:
        """Build the run-time tables of every replica with a run-time placement.

        Raises
        ------
        PlacementError
            When such an app also has a transfer timeout or adaptive dispatch, or a
            unit of the scenario may fail.
        """
        self.uids = list(servers)
        self.servers = [servers[u] for u in self.uids]
        # per unit, per worker: the estimated finish of the last op decided there (DS3's
        # available_time_list: a decision takes the worker free first)
        self.booked = [[0.0] * servers[u].workers for u in self.uids]
        self.given = [0] * len(self.uids)
        self.tables: dict[int, RuntimeApp] = {}
        self._pending: dict[RuntimeRule, list[tuple[Request, int]]] = {}
        self._link_bits: dict = {}  # direction -> (last change, flows, first, last, bits)
        self._decide_at: float | None = None
        for app in apps:
            for rep in app.replicas:
                if runtime_rule(rep.plan.placement) is None:
                    continue
                entry = app.entry
                if entry.transfer_timeout_s is not None or app.adaptive is not None:
                    raise PlacementError(
                        "a run-time policy cannot be combined with transfer_timeout_ms "
                        "or adaptive dispatch",
                        rep.plan.placement.policy,
                    )
                if app.failures:  # undoing an attempt needs its units known in advance
                    raise PlacementError(
                        "a run-time policy cannot be combined with failures (an attempt "
                        "a failure cuts is undone on its plan's units, decided only as "
                        "its ops become ready); use a static policy such as heft",
                        rep.plan.placement.policy,
                    )
                self.tables[id(rep)] = RuntimeApp(
                    app, rep, oracle, graphs[entry.model], self.uids, self.ledger, make_step
                )

    # -- a request's start and its ops becoming ready ---------------------------------------
    def start(self, request: Request, now: float) -> None:
        table = self.tables.get(id(request.rep))
        if table is None:
            super().start(request, now)
            return
        request.rt = RequestState(table)
        request.steps = [None] * len(table.preds)  # type: ignore[assignment]  # decided later
        request.holders = [len(s) + e for s, e in zip(table.succs, table.exits, strict=True)]
        for i, preds in enumerate(table.preds):
            if not preds:
                self._ready(request, i, now)

    def _ready(self, request: Request, i: int, now: float) -> None:
        self._pending.setdefault(request.rt.app.rule, []).append((request, i))
        if self._decide_at != now:  # one decision event per instant
            self._decide_at = now
            after(self.env, 0, self._decide)

    def _decide(self, _event) -> None:
        self._decide_at = None
        pending, self._pending = self._pending, {}
        for rule, batch in pending.items():
            batch.sort(key=lambda entry: (entry[0].rid, entry[1]))
            self._decide_batch(rule, batch)

    def _decide_batch(self, rule: RuntimeRule, batch: list[tuple[Request, int]]) -> None:
        now = self.env._now
        for decision in rule(*self._snapshot(batch, now)):
            request, i = batch[decision.key]
            self._assign(request, i, decision.unit, decision.finish_s, now)

    def _snapshot(
        self, batch: list[tuple[Request, int]], now: float
    ) -> tuple[list[ReadyOp], UnitsView]:
        """What the rule sees: the ready ops (key = position in ``batch``) and the units."""
        backlog: dict = {}  # link direction -> bits it has still to send, read once
        ready = []
        for key, (request, i) in enumerate(batch):
            state = request.rt
            table = state.app
            preds = table.preds[i]
            # per candidate unit, when the last input would be there: a fixed delay
            # counts from when its data was sent, a network transfer from now, behind
            # the bits its links still have to send (the links' state)
            if not preds:
                sent = request.arrival_s
                at = [
                    sent + est if fixed else now + est + self._wait_s(hops, backlog, now)
                    for est, fixed, hops in table.input_at[i]
                ]
            else:
                unit, finish = state.unit, state.finish_s
                at = [now] * len(table.units[i])
                for p in preds:
                    end = finish[p]
                    row = [
                        end + est if fixed else now + est + self._wait_s(hops, backlog, now)
                        for est, fixed, hops in table.arrivals(p, i, unit[p])
                    ]
                    at = list(map(max, at, row))
            inputs_at = tuple([t if t > now else now for t in at])
            ready.append(ReadyOp(key, table.units[i], table.time_s[i], inputs_at))
        free_at = []
        idle = []
        for server, booked in zip(self.servers, self.booked, strict=True):
            free = min(booked) if len(booked) > 1 else booked[0]
            resting = len(server._idle) == server.workers
            idle.append(resting)
            if not resting or server._queue:
                # the work there now (other apps' too), spread over its workers
                left_s = server.backlog_s
                for worker in server._workers:
                    if worker.payload is not None:
                        left_s += max(0.0, worker.start_s + worker.duration_s - now)
                live = now + left_s / server.workers
                if live > free:
                    free = live
            free_at.append(free)
        view = UnitsView(now, tuple(free_at), tuple(idle), tuple(self.given))
        return ready, view

    def _wait_s(self, hops, backlog: dict, now: float) -> float:
        """Time (s) the bits queued on ``hops``' link directions take at their bandwidth."""
        wait_s = 0.0
        for hop in hops:
            direction = (hop.link, hop.src)
            bits = backlog.get(direction)
            if bits is None:
                bits = backlog[direction] = self._queued_bits(direction, now)
            if bits:
                wait_s += bits / hop.bandwidth_bps
        return wait_s

    def _queued_bits(self, direction, now: float) -> float:
        """Bits a link direction has still to send now. Its flows' counts are as of its
        last change, and their rates constant since: the sum is kept until the link
        changes (a run that loads a link holds many flows on it)."""
        link = self.network.links[direction]
        flows = link.flows
        if not flows:
            return 0.0
        kept = self._link_bits.get(direction)
        if kept is None or not (
            kept[0] == link.updated_s
            and kept[1] == len(flows)
            and kept[2] is flows[0]
            and kept[3] is flows[-1]
        ):
            total = sum(flow.bits_left for flow in flows)
            kept = self._link_bits[direction] = (
                link.updated_s,
                len(flows),
                flows[0],
                flows[-1],
                total,
            )
        return max(0.0, kept[4] - link.throughput_bps * (now - link.updated_s))

    def _assign(self, request: Request, i: int, u: int, finish_s: float, now: float) -> None:
        state = request.rt
        table = state.app
        if u not in table.steps[i]:
            raise PlacementError(
                f"the run-time rule chose unit '{self.uids[u]}', which cannot run it",
                request.plan.placement.policy,
                request.plan.ops[i],
            )
        booked = self.booked[u]
        first = booked.index(min(booked))
        if finish_s > booked[first]:
            booked[first] = finish_s
        self.given[u] += 1
        state.unit[i] = u
        state.decided += 1
        state.rank[i] = state.decided
        request.steps[i] = table.steps[i][u]  # type: ignore[index]  # a list (start)
        preds = table.preds[i]
        moves = []
        if not preds:
            moves.append((table.input_move(i, u), request.arrival_s))
        local = []
        for p in preds:
            if state.unit[p] == u:
                local.append(p)
            else:
                moves.append((table.edge_move(p, i, state.unit[p], u), state.finish_s[p]))
        state.local_in[i] = tuple(local)
        request.waits[i] = len(moves)
        if not moves:
            request.waits[i] = 1
            self._deliver(request, (i,), now)
            return
        on_arrival: list = self._on_arrival
        for fast, sent_s in moves:
            if fast.delay_s is None:
                self._start_hop(request, fast, 0, now)
                continue
            arrive_s = sent_s + fast.delay_s
            if fast.books:
                self.ledger.move(request, fast, sent_s, arrive_s)
            if arrive_s > now:
                wake(self.env, arrive_s - now, InTransit(request, fast), on_arrival)
            else:
                self._arrive(InTransit(request, fast))

    # -- ops -------------------------------------------------------------------------------
    def _deliver(self, request: Request, targets: tuple[int, ...], now: float) -> None:
        state = request.rt
        if state is None:
            super()._deliver(request, targets, now)
            return
        waits = request.waits
        for i in targets:
            waits[i] -= 1
            if waits[i]:
                continue
            ready_s = request.ready_s[i]
            if now > ready_s:
                ready_s = request.ready_s[i] = now
            step = request.steps[i]
            key = self.key(
                request.rid, state.rank[i], request.priority, request.deadline_at_s, ready_s
            )
            step.server.submit(key, step.duration_s, (request, i))

    def _op_done(self, payload, start_s: float, end_s: float) -> None:
        super()._op_done(payload, start_s, end_s)
        request, i = payload
        state = request.rt
        if state is None:
            return
        table = state.app
        state.finish_s[i] = end_s
        holders = request.holders
        for p in state.local_in[i]:  # read in place: the producer's buffer may go
            holders[p] -= 1
            if holders[p] == 0:
                producer = request.steps[p]
                producer.tally.memory_bytes -= producer.output_bytes
        if table.exits[i]:
            self._start_move(request, table.output_move(i, state.unit[i]), end_s)
        left = state.left
        for j in table.succs[i]:
            left[j] -= 1
            if left[j] == 0:
                self._ready(request, j, end_s)
