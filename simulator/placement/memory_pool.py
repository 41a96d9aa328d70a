"""Nodes' memory pools against the plans placed on them (pure; docs/memory.md).

A node's pool (``memory_gb``) holds the weights of every deployment on its units from
t = 0 (once per distinct (model, units), as the engine loads them) and the activations
of the requests in flight. What one request can hold on a node at most is its
*activation bound*: every output its ops there write plus every tensor moved in to them
(the engine frees each buffer after its last reader, so what is live never exceeds it).

Under ``memory_policy: refuse`` a node whose weights plus one request's largest bound do
not fit is a placement problem (``socsim validate`` and ``run`` report it at the
placement's YAML path), and the engine lets a request start on the node only while the
bounds of the requests started there fit beside the weights; the others wait
(:class:`~simulator.engine.memory.MemoryGate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from simulator.placement.plan import ExecutionPlan
from simulator.platform import Platform
from simulator.rules import node_document_path

GB = 1e9


def size_text(nbytes: float) -> str:
    """``nbytes`` for a message: 4 significant digits in B, kB, MB or GB (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:.4g} B"


def activation_bound(plan: ExecutionPlan, platform: Platform) -> dict[str, int]:
    """The most bytes of activations one request of ``plan`` can hold on each node (B)."""
    out: dict[str, int] = {}
    for uid, nbytes in zip(plan.units, plan.output_bytes, strict=True):
        node = platform.node_of(uid).name
        out[node] = out.get(node, 0) + nbytes
    moves = [*plan.input_moves, *(m for ms in plan.moves_out for m in ms)]
    for move in moves:
        if move.dst_unit is not None and move.consumers:
            node = platform.node_of(move.dst_unit).name
            out[node] = out.get(node, 0) + move.nbytes
    return out


def resident_weights(
    plans: Sequence[ExecutionPlan], platform: Platform
) -> dict[str, list[tuple[ExecutionPlan, int]]]:
    """Per node, each distinct deployment's weight bytes resident there from t = 0."""
    seen = set()
    out: dict[str, list[tuple[ExecutionPlan, int]]] = {}
    for plan in plans:
        key = (plan.model, plan.units)
        if key in seen:
            continue
        seen.add(key)
        mine: dict[str, int] = {}
        for uid, nbytes in zip(plan.units, plan.weight_bytes, strict=True):
            node = platform.node_of(uid).name
            mine[node] = mine.get(node, 0) + nbytes
        for node, nbytes in mine.items():
            if nbytes:
                out.setdefault(node, []).append((plan, nbytes))
    return out


@dataclass(frozen=True)
class PoolProblem:
    """A placement whose node's pool is too small under ``refuse``.

    ``app`` and ``replica`` name the placement to report it at (the largest contributor
    of weights to the node, or the one whose request does not fit).
    """

    app: str
    replica: int
    node: str
    message: str


def _label(placement: tuple[str, int], plans: Mapping[str, Sequence[ExecutionPlan]]) -> str:
    """'app', or 'app' replica k when the app has several placements (each holds weights)."""
    app, replica = placement
    return f"'{app}' replica {replica}" if len(plans[app]) > 1 else f"'{app}'"


def pool_problems(
    platform: Platform, plans: Mapping[str, Sequence[ExecutionPlan]]
) -> list[PoolProblem]:
    """Every node under ``refuse`` whose weights, plus one request, do not fit its pool."""
    where = {id(plan): (app, k) for app, mine in plans.items() for k, plan in enumerate(mine)}
    every = [plan for mine in plans.values() for plan in mine]
    weights = resident_weights(every, platform)
    bounds_of: list[dict[str, int]] | None = None  # once per plan, not per node and plan
    problems = []
    for name, node in platform.nodes.items():
        pool = node.memory_bytes
        if node.memory_policy != "refuse" or pool == float("inf"):
            continue
        parts = weights.get(name, [])
        total = sum(nbytes for _, nbytes in parts)
        if bounds_of is None:  # a fleet: hundreds of nodes x hundreds of plans otherwise
            bounds_of = [activation_bound(plan, platform) for plan in every]
        bounds = [(bound.get(name, 0), plan) for bound, plan in zip(bounds_of, every, strict=True)]
        largest, plan = max(bounds, key=lambda b: b[0], default=(0, None))
        if total + largest <= pool:
            continue
        fix = (
            f"fix: place fewer ops on '{name}', use a smaller or quantised model "
            f"(int8 weights are a quarter of fp32), give {node_document_path(name)}.memory_gb "
            f"(at least {(total + largest) / GB:.4g}), or memory_policy: allow"
        )
        if total > pool:
            plan, _ = max(parts, key=lambda p: p[1])
            held = ", ".join(
                f"{_label(where[id(p)], plans)} {size_text(nbytes)}"
                for p, nbytes in parts
                if id(p) in where
            )
            message = (
                f"{size_text(total)} of weights on node '{name}' do not fit its "
                f"{size_text(pool)} memory pool (memory_gb; weights by app: {held}); {fix}"
            )
        else:
            message = (
                f"node '{name}': its {size_text(total)} of weights and the "
                f"{size_text(largest)} of activations one request can hold there do not fit "
                f"its {size_text(pool)} memory pool (memory_gb); {fix}"
            )
        app, replica = where[id(plan)]
        problems.append(PoolProblem(app, replica, name, message))
    return problems
