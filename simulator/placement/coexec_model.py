"""The per-op time model of co-execution (:mod:`simulator.placement.coexec`): the finish
time of an op on one unit or split across several around a home unit, and the record
of what was decided per op. Pure: it asks the cost oracle, it runs nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial

from simulator.graph.model import ModelGraph, Op
from simulator.graph.transforms import (
    apportion,
    merge_op,
    part_ops,
)
from simulator.hardware.cost import op_time_parts_s
from simulator.placement.balance import Line
from simulator.placement.plan import dram_demand
from simulator.platform import CostOracle


# -- the per-op model ---------------------------------------------------------------------
@dataclass(frozen=True)
class OpDecision:
    """What co_execute predicted and decided for one eligible op."""

    op: str
    axis: str
    single_s: Mapping[str, float]
    ratios: Mapping[str, float]
    split_s: float | None
    split: bool
    reason: str

    @property
    def best_unit(self) -> str:
        return min(self.single_s, key=self.single_s.__getitem__)

    @property
    def best_single_s(self) -> float:
        return self.single_s[self.best_unit]


class SplitModel:
    """Per-op finish times of units around a home (the model is stated in the docstring of
    :mod:`simulator.placement.coexec`)."""

    def __init__(self, graph: ModelGraph, oracle: CostOracle, source: str, home: str):
        self.graph = graph
        self.oracle = oracle
        self.source = source
        self.home = home
        self.node_of = oracle.platform.node_of

    # inputs -------------------------------------------------------------------------------
    def input_time_s(self, op: Op, uid: str, axis: str, ratios=None, index: int = 0) -> float:
        """Time for the op's inputs (or a part's share of them) to reach ``uid``."""
        preds = self.graph.predecessors(op.name)
        if not preds:
            return self.oracle.node_transfer_time_s(
                self.graph.request_input_bytes, self.source, self.node_of(uid).name
            )
        worst = 0.0
        for p in preds:
            edge = self.graph.edge(p, op.name)
            nbytes = edge.bytes
            if axis == "rows" and ratios is not None:
                nbytes = apportion(edge.bytes, ratios)[index]
            worst = max(worst, self.oracle.transfer_time_s(edge, nbytes, self.home, uid))
        return worst

    def input_lines(self, op: Op, uid: str, axis: str) -> list[Line]:
        preds = self.graph.predecessors(op.name)
        if not preds:
            return [(self.input_time_s(op, uid, axis), 0.0)]
        lines = []
        for p in preds:
            edge = self.graph.edge(p, op.name)
            transfer = self.oracle.edge_transfer(edge, self.home, uid)
            full, zero = transfer.time_s(edge.bytes), transfer.time_s(0)
            lines.append((full, 0.0) if axis == "channels" else (zero, full - zero))
        return lines

    # the part itself ----------------------------------------------------------------------
    def _probe_s(self, op: Op, uid: str, **work: float) -> float:
        flops = work.get("flops", 0.0)
        probe = replace(
            op,
            flops=flops,
            macs=min(op.macs, flops / 2),
            params=int(work.get("params", 0)),
            input_elems=int(work.get("input_elems", 0)),
            output_elems=int(work.get("output_elems", 0)),
        )
        return self.oracle.op_time_s(probe, uid)

    def exec_lines(self, op: Op, uid: str, axis: str) -> list[Line]:
        """``t_u(r)`` as lines: ``d + r·C`` and ``d + M0 + r·M1``."""
        d = self._probe_s(op, uid)
        compute = self._probe_s(op, uid, flops=op.flops) - d
        if axis == "channels":
            fixed = self._probe_s(op, uid, input_elems=op.input_elems) - d
            scaled = self._probe_s(op, uid, params=op.params, output_elems=op.output_elems) - d
        else:
            fixed = self._probe_s(op, uid, params=op.params) - d
            scaled = (
                self._probe_s(op, uid, input_elems=op.input_elems, output_elems=op.output_elems) - d
            )
        return [(d, compute), (d + fixed, scaled)]

    # outputs ------------------------------------------------------------------------------
    def back_time_s(self, nbytes: int, uid: str) -> float:
        if uid == self.home:
            return 0.0
        return self.oracle.transfer_time_s(None, nbytes, uid, self.home)

    def back_line(self, op: Op, uid: str) -> Line:
        if uid == self.home:
            return (0.0, 0.0)
        transfer = self.oracle.edge_transfer(None, uid, self.home)
        zero = transfer.time_s(0)
        return (zero, transfer.time_s(op.output_bytes) - zero)

    # whole ----------------------------------------------------------------------------------
    def lines(self, op: Op, uid: str, axis: str) -> list[Line]:
        """``F_u(r)`` as the lines whose maximum it is."""
        ba, bb = self.back_line(op, uid)
        return [
            (ia + ea + ba, ib + eb + bb)
            for ia, ib in self.input_lines(op, uid, axis)
            for ea, eb in self.exec_lines(op, uid, axis)
        ]

    def single_s(self, op: Op, uid: str, axis: str) -> float:
        """The whole op on ``uid``: inputs there, run, output back to the home."""
        return (
            self.input_time_s(op, uid, axis)
            + self.oracle.op_time_s(op, uid)
            + self.back_time_s(op.output_bytes, uid)
        )

    def split_s(self, op: Op, ratios: Mapping[str, float], axis: str) -> float:
        """Predicted time of the real parts of a split (inputs, parts, outputs, merge)."""
        units = list(ratios)
        values = [ratios[u] for u in units]
        parts = part_ops(op, values, axis)
        finish = 0.0
        body_from: dict[str, float] = {}  # per node: the first part's body start
        dram_bytes: dict[str, list[float]] = {}  # per node: the DRAM bytes of its parts
        for i, (uid, part) in enumerate(zip(units, parts, strict=True)):
            arrive_s = self.input_time_s(op, uid, axis, values, i)
            finish = max(
                finish,
                arrive_s
                + self.oracle.op_time_s(part, uid)
                + self.back_time_s(part.output_bytes, uid),
            )
            unit = self.oracle.platform.unit(uid)
            # the engine's rule: a part with no memory term (a unit of unbounded
            # bandwidth, a view) or on an unbounded DRAM pulls nothing from it
            demand = dram_demand(part, uid, self.oracle, partial(op_time_parts_s, part, unit, uid))
            if demand is None:
                continue
            node = self.oracle.platform.node_of(uid).name
            fixed_s, part_bytes = demand
            body_from[node] = min(body_from.get(node, math.inf), arrive_s + fixed_s)
            dram_bytes.setdefault(node, []).append(part_bytes)
        for node, nbytes in dram_bytes.items():
            # parts on one node share its DRAM (docs/shared-dram.md): together they
            # cannot move their bytes faster than its bandwidth (a lower bound)
            if len(nbytes) > 1:
                dram_bps = self.oracle.platform.nodes[node].dram_bps
                finish = max(finish, body_from[node] + sum(nbytes) / dram_bps)
        return finish + self.oracle.op_time_s(merge_op(op), self.home)
