"""The plans of an early-exit model's exits, and the expected latency of a request mix (pure).

A request that leaves at exit ``k`` runs only :func:`~simulator.graph.exits.cascade_ops`
of ``k``: its plan is the app's placement restricted to those ops, compiled afresh
(:func:`~simulator.placement.plan.compile_plan`), so the ops it skips never run and no
tensor moves to them; each unit still runs the ops it keeps in the placement's order.
The outputs of that plan are exit ``k``'s answer and the verdicts of the heads it passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.errors import PlacementError
from simulator.graph.exits import ExitModel, cascade_ops, expected, subgraph
from simulator.graph.model import ModelGraph
from simulator.placement.base import Placement
from simulator.placement.estimate import estimate
from simulator.placement.listsched import ONLINE_NOTE
from simulator.placement.plan import ExecutionPlan, compile_plan
from simulator.platform import CostOracle

#: The note a policy that fixes the exit leaves on its placement (the exit's name).
EXIT_NOTE = "exit"


def fixed_exit(plan: ExecutionPlan) -> str | None:
    """The exit every request of ``plan`` takes when its policy chose one, else None."""
    return plan.placement.notes.get(EXIT_NOTE)


def restrict(placement: Placement, names: frozenset[str]) -> Placement:
    """``placement`` on the ops ``names`` only (same units, same order)."""
    return Placement(
        {op: uid for op, uid in placement.assignment.items() if op in names},
        tuple(op for op in placement.order if op in names),
        placement.policy,
        placement.source,
        placement.notes,
        cores={op: k for op, k in placement.cores.items() if op in names},
    )


def exit_plans(
    graph: ModelGraph, plan: ExecutionPlan, oracle: CostOracle
) -> tuple[ExecutionPlan, ...] | None:
    """One plan per exit of ``graph`` (``final`` last: ``plan`` itself), or None when
    ``graph`` has no exits or ``plan``'s policy fixed the exit.

    Raises
    ------
    PlacementError
        When the placement's policy rewrote the model (its ops are not the model's), or
        is online HEFT (which reserves the whole model for each request).
    """
    if not isinstance(graph, ExitModel) or fixed_exit(plan) is not None:
        return None
    if ONLINE_NOTE in plan.placement.notes:
        # Online HEFT reserves each request's ops at its arrival, on the whole model; a
        # request running its exit's view would bypass the reservations (its ops would
        # queue on the plain units, the reserved ones never coming), so refuse it.
        raise PlacementError(
            f"model '{graph.name}' has early exits, which online HEFT does not plan (it "
            "reserves every op of the model for each request at its arrival); use "
            "'heft' without 'online: true', or 'edgent'",
            plan.placement.policy,
        )
    if plan.placement.graph is not None:
        raise PlacementError(
            f"it rewrote model '{graph.name}' (split ops), so its early exits name ops the "
            "placement lacks; use a policy that keeps the model's ops (split_point, "
            "heft, ...) or 'edgent'",
            plan.placement.policy,
        )
    views = []
    for k in range(len(graph.exits)):
        names = cascade_ops(graph, k)
        placement = restrict(plan.placement, names)
        views.append(compile_plan(subgraph(graph, names), placement, oracle, plan.label))
    return (*views, plan)


def expected_latency_s(
    plans: Sequence[ExecutionPlan], shares: Sequence[float], oracle: CostOracle
) -> float:
    """Mean latency (s) of a lone request over the exits: ``Σ share_k × latency_k``, each
    exit's latency the contention-free estimate of its plan."""
    return expected([estimate(p, oracle).latency_s for p in plans], shares)
