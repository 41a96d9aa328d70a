"""What the engine's run-time decisions read, built once per run (no SimPy).

:class:`RuntimeApp`: per replica placed by a run-time rule, every op's step on every
unit that can run it, the transfers between units, and the transfer-time rows the
snapshots read (linear in the bytes; computed on first use). :class:`RequestState`: a
request's decisions. :mod:`simulator.engine.runtime` drives them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simulator.engine.ledger import Ledger
from simulator.engine.state import App, FastMove, OpStep, Replica
from simulator.graph.model import ModelGraph
from simulator.network.topology import BITS_PER_BYTE
from simulator.placement.base import Placement
from simulator.placement.plan import ExecutionPlan, Move, compile_plan
from simulator.placement.runtime import RuntimeRule, runtime_rule
from simulator.platform import CostOracle, Transfer

#: ``make_step(plan, i, app, trace_code)``: op ``i`` of ``plan`` with its unit's objects
MakeStep = Callable[[ExecutionPlan, int, str, int], OpStep]


class RuntimeApp:
    """What decisions and moves of one replica need, built once with the engine.

    ``steps[i][u]`` is op ``i``'s :class:`OpStep` on unit index ``u`` (its costs, server,
    DVFS state...); transfers are the oracle's, asked here, never during the run.
    """

    def __init__(
        self,
        app: App,
        rep: Replica,
        oracle: CostOracle,
        graph: ModelGraph,
        uids: list[str],
        ledger: Ledger,
        make_step: MakeStep,
    ):
        plan = rep.plan
        placement = plan.placement
        rule = runtime_rule(placement)
        assert rule is not None  # RuntimeDataflow.prepare builds tables for these only
        self.rule: RuntimeRule = rule
        self.app_name = app.entry.app
        self.plan = plan
        graph = placement.graph or graph
        unit_index = {u: k for k, u in enumerate(uids)}
        index = {op: i for i, op in enumerate(plan.ops)}
        self.preds = [tuple(index[p] for p in graph.predecessors(op)) for op in plan.ops]
        self.succs = [tuple(index[s] for s in graph.successors(op)) for op in plan.ops]
        self.exits = [not s for s in self.succs]
        self.edges = {(index[e.src], index[e.dst]): e for e in graph.edges()}  # (i, j) -> Edge
        candidates = placement.notes["candidates"]
        rows = oracle.op_time_rows([graph.op(op) for op in plan.ops])
        self.units = [
            tuple(unit_index[u] for u in candidates if row[u] is not None) for row in rows
        ]
        # op i's step on every candidate unit: one plan per unit, every op it can run on it
        self.steps: list[dict[int, OpStep]] = [{} for _ in plan.ops]
        for u in sorted({u for units in self.units for u in units}):
            assignment = {
                op: uids[u] if u in self.units[i] else plan.units[i]
                for i, op in enumerate(plan.ops)
            }
            variant = compile_plan(
                graph,
                Placement(assignment, plan.ops, placement.policy, plan.source),
                oracle,
                label=plan.label,
            )
            first = ledger.op_codes(self.app_name, variant)
            for i in range(plan.size):
                if u in self.units[i]:
                    step = make_step(variant, i, self.app_name, first + i)
                    step.local_next = step.local_inputs = step.moves_out = ()
                    # units are decided at run time: a view owns its output here (the
                    # variant's aliasing assumed its producer's unit)
                    step.output_bytes = graph.op(plan.ops[i]).output_bytes
                    self.steps[i][u] = step
        self.time_s = [
            tuple(self.steps[i][u].duration_s for u in us) for i, us in enumerate(self.units)
        ]
        used = sorted({u for units in self.units for u in units})
        node_of = {u: oracle.platform.node_of(uids[u]).name for u in used}
        self.transfers = {
            (a, b): oracle.edge_transfer(None, uids[a], uids[b])
            for a in used
            for b in used
            if a != b
        }
        self.explicit = {
            (key, a, b): oracle.edge_transfer(edge, uids[a], uids[b])
            for key, edge in self.edges.items()
            if edge.comm_s is not None
            for a in used
            for b in used
            if a != b
        }
        self.inputs = {}
        self.outputs = {}
        for u in used:
            hops = oracle.route(plan.source, node_of[u])
            self.inputs[u] = Transfer("network" if hops else "local", hops=hops)
            hops = oracle.route(node_of[u], plan.source)
            self.outputs[u] = Transfer("network" if hops else "local", hops=hops)
        self.input_bytes = graph.request_input_bytes
        self.output_bytes = tuple(graph.op(op).output_bytes for op in plan.ops)  # tensors'
        self._fast: dict[tuple, FastMove] = {}
        self._rows: dict[tuple, tuple] = {}
        self._coefficients: dict[tuple, tuple] = {}
        # per candidate unit of an entry op: the request input's time there (s), and
        # whether it is a fixed delay (counted from the arrival) rather than a transfer
        self.input_at = [
            tuple(
                (
                    self.inputs[b].time_s(self.input_bytes),
                    not self.inputs[b].hops,
                    self.inputs[b].hops,
                )
                for b in us
            )
            for us in self.units
        ]
        self._ledger = ledger
        self._uids = uids

    def input_move(self, i: int, b: int) -> FastMove:
        """The request input's move to entry op i on unit b."""
        return self._cached(
            (None, i, None, b),
            lambda: Move(None, None, self._uids[b], self.input_bytes, self.inputs[b], (i,)),
        )

    def output_move(self, p: int, a: int) -> FastMove:
        """Exit op p's output from unit a back to the source."""
        return self._cached(
            (p, None, a, None),
            lambda: Move(p, self._uids[a], None, self.output_bytes[p], self.outputs[a], ()),
        )

    def edge_move(self, p: int, i: int, a: int, b: int) -> FastMove:
        """Edge p -> i's tensor from unit a to unit b."""

        def build() -> Move:
            transfer = self.explicit.get(((p, i), a, b)) or self.transfers[(a, b)]
            nbytes = self.edges[(p, i)].bytes
            return Move(p, self._uids[a], self._uids[b], nbytes, transfer, (i,))

        return self._cached((p, i, a, b), build)

    def _cached(self, key: tuple, build: Callable[[], Move]) -> FastMove:
        fast = self._fast.get(key)
        if fast is None:  # built on first use: registers its trace code once
            fast = self._fast[key] = FastMove(build(), self._ledger, self.app_name, self.plan)
        return fast

    def arrivals(self, p: int, i: int, a: int) -> tuple:
        """Per candidate unit of op i: (contention-free s of edge p -> i from unit a, whether
        it is a fixed delay counted from p's end, the network hops it takes) (0, True and no
        hop on unit a itself)."""
        key = (p, i, a)
        row = self._rows.get(key)
        if row is None:
            edge = self.edges[(p, i)]
            units = self.units[i]
            # a row depends on the bytes and the units only (unless the edge has its own
            # cost): the consumers of one producer share it
            if edge.comm_s is None:  # a row per (bytes, units): linear in the bytes
                shared = (edge.bytes, a, units)
                row = self._rows.get(shared)
                if row is None:
                    nbytes = edge.bytes
                    row = self._rows[shared] = tuple(
                        [
                            (base_s + nbytes * per_byte_s, fixed, hops)
                            for base_s, per_byte_s, fixed, hops in self._linear(a, units)
                        ]
                    )
            else:
                entries = []
                for b in units:
                    if b == a:
                        entries.append((0.0, True, ()))
                        continue
                    transfer = self.explicit[((p, i), a, b)]
                    entries.append((transfer.time_s(edge.bytes), True, ()))
                row = tuple(entries)
            self._rows[key] = row
        return row

    def _linear(self, a: int, units: tuple[int, ...]) -> tuple:
        """Per unit of ``units``: (s, s per byte, fixed delay?, hops) of a tensor from unit
        ``a``: a transfer's contention-free time is linear in its bytes (a sync or the
        route's latencies, plus a copy or each hop's serialisation)."""
        key = (a, units)
        found = self._coefficients.get(key)
        if found is None:
            entries: list[tuple] = []
            for b in units:
                if b == a:
                    entries.append((0.0, 0.0, True, ()))
                    continue
                transfer = self.transfers[(a, b)]
                copy = transfer.copy_bytes_per_s
                per_byte_s = 0.0 if math.isinf(copy) else 1.0 / copy
                base_s = transfer.delay_s
                for hop in transfer.hops:
                    base_s += hop.latency_s
                    per_byte_s += BITS_PER_BYTE / hop.bandwidth_bps
                entries.append((base_s, per_byte_s, not transfer.hops, transfer.hops))
            found = self._coefficients[key] = tuple(entries)
        return found


class RequestState:
    """A run-time request's decisions: unit, finish and decision rank of each op."""

    __slots__ = ("app", "decided", "finish_s", "left", "local_in", "rank", "unit")

    def __init__(self, app: RuntimeApp):
        n = len(app.preds)
        self.app = app
        self.unit = [-1] * n
        self.finish_s = [0.0] * n
        self.left = [len(p) for p in app.preds]  # predecessors not finished
        self.rank = [0] * n  # decision order within the request (the unit key's position)
        self.local_in: list[tuple[int, ...]] = [()] * n
        self.decided = 0
