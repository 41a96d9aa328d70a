"""Neurosurgeon's split point (Kang et al., ASPLOS 2017): the best prefix cut.

Tries every prefix cut ``k = 0..n`` of ``graph.order`` (``ops[:k]`` on the device,
``ops[k:]`` on the remote unit; ``k = n`` is device-only, ``k = 0`` remote-only),
predicts each with the same contention-free list-schedule estimate the engine matches
(:func:`~simulator.placement.plan.compile_plan` +
:func:`~simulator.placement.estimate.estimate`; all cuts in one pass, bit-identical, by
:mod:`~simulator.placement.splitcurve` when that applies), and keeps the best by objective. On a
chain these are all the cuts with one crossing; on a DAG they are the prefix cuts of the
deterministic topological order, a subset of the partitions (use ``min_cut`` for all of
them). Ties go to the larger ``k`` (more on the device). The whole curve is in
``notes["candidates"]``. Pure: no SimPy, no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.estimate import NOMINAL, estimate
from simulator.placement.locations import (
    INPUT_LABEL,
    LOAD_OPTIONS,
    LOCATION_OPTIONS,
    load_conditions,
    location_objective,
    resolve_locations,
)
from simulator.placement.objectives import constraint_problems, with_common_options
from simulator.placement.plan import compile_plan
from simulator.placement.splitcurve import prefix_cut_estimates
from simulator.platform import CostOracle
from simulator.schema import Field, Record, Text, nearest


# -- split_point ---------------------------------------------------------------------------
def _cut(ops: tuple[str, ...], k: int, device: str, remote: str) -> dict[str, str]:
    """The assignment of prefix cut k: ops[:k] on ``device``, the rest on ``remote``."""
    return {name: device if i < k else remote for i, name in enumerate(ops)}


def _curve_row(k: int, cut_after: str) -> dict[str, Any]:
    return {
        "k": k,
        "cut_after": cut_after,
        "latency_s": None,
        "device_energy_j": None,
        "energy_j": None,
        "bytes_sent": None,
        "objective": None,
        "feasible": False,
        "reason": "",
    }


@POLICIES.register(
    "split_point",
    with_common_options({**LOCATION_OPTIONS, **LOAD_OPTIONS}, "split_point placement"),
)
def split_point(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Neurosurgeon: the best prefix cut of the op order between a device and a remote unit.

    Every cut ``k`` (ops[:k] on ``device``, the rest on ``remote``) is predicted with
    the contention-free estimate; the best feasible one by objective wins, ties to the
    larger ``k``. ``notes["candidates"]`` holds the whole curve, infeasible cuts
    included with their reason.
    """
    policy = "split_point"
    objective = location_objective(options, policy)
    device, remote = resolve_locations(graph, oracle, source, options, policy)
    ops = graph.order
    n = len(ops)
    # ops[:k] must run on the device: k <= first op the device cannot run
    device_limit, device_why = n, ""
    for i, name in enumerate(ops):
        reason = oracle.unsupported_reason(graph.op(name), device)
        if reason is not None:
            device_limit, device_why = i, f"'{device}' cannot run '{name}': {reason}"
            break
    # ops[k:] must run remotely: k > last op the remote unit cannot run
    remote_floor, remote_why = 0, ""
    for i in reversed(range(n)):
        reason = oracle.unsupported_reason(graph.op(ops[i]), remote)
        if reason is not None:
            remote_floor, remote_why = i + 1, f"'{remote}' cannot run '{ops[i]}': {reason}"
            break

    # the nodes' declared load_factor (Neurosurgeon's K_load) stretches their op times;
    # remote_queued_ms delays the first remote op
    conditions = load_conditions(oracle, remote, options)
    # every cut's estimate in one pass when that is exact (None: one plan per cut)
    fast = None
    if conditions is NOMINAL:  # the one-pass curve knows no load
        fast = prefix_cut_estimates(
            graph, oracle, source, device, remote, remote_floor, device_limit
        )
    prefix_weights = [0]
    for name in ops:
        prefix_weights.append(prefix_weights[-1] + graph.op(name).weight_bytes)
    check_memory = options.get("check_memory", True)

    curve: list[dict[str, Any]] = []
    best_k: int | None = None
    best_any: int | None = None  # best runnable candidate, constraints ignored
    for k in range(n + 1):
        row = _curve_row(k, ops[k - 1] if k else INPUT_LABEL)
        curve.append(row)
        if k > device_limit or k < remote_floor:
            row["reason"] = device_why if k > device_limit else remote_why
            continue
        if fast is not None:
            predicted = fast[k - remote_floor]
        else:
            placement = Placement(_cut(ops, k, device, remote), ops, policy, source)
            predicted = estimate(compile_plan(graph, placement, oracle), oracle, conditions)
        weights = None
        if check_memory:  # resident weights per unit, in op order as the check lists them
            weights = {device: prefix_weights[k]} if k else {}
            if k < n:
                weights[remote] = prefix_weights[n] - prefix_weights[k]
        broken = constraint_problems(predicted.latency_s, weights, oracle, options)
        value = objective.value(predicted)
        row.update(
            latency_s=predicted.latency_s,
            device_energy_j=predicted.device_energy_j,
            energy_j=predicted.energy_j,
            bytes_sent=predicted.bytes_sent,
            objective=value,
            feasible=not broken,
            reason="; ".join(broken),
        )
        if best_any is None or value <= curve[best_any]["objective"]:
            best_any = k
        if not broken and (best_k is None or value <= curve[best_k]["objective"]):
            best_k = k

    if best_k is None:
        if best_any is None:
            raise PlacementError(
                f"no cut of the op order can run: {device_why or remote_why}"
                + (f"; {remote_why}" if device_why and remote_why else ""),
                policy,
            )
        row = curve[best_any]
        raise PlacementError(
            f"no cut meets the constraints; the best by {objective.label} "
            f"(cut after '{row['cut_after']}', k={best_any}) breaks: {row['reason']}",
            policy,
        )
    notes = {
        "device": device,
        "remote": remote,
        "objective": objective.label,
        "k": best_k,
        "cut_after": curve[best_k]["cut_after"],
        "cuts": "prefixes of the op order" + ("" if graph.is_chain() else " (not a chain)"),
        "candidates": tuple(curve),
    }
    return Placement(_cut(ops, best_k, device, remote), ops, policy, source, notes)


# -- cut -----------------------------------------------------------------------------------
@POLICIES.register(
    "cut",
    Record(
        {
            "after": Field(
                Text(),
                doc=f"the last op on the device ('{INPUT_LABEL}': every op remote); "
                "ops up to it in the op order run on 'device', the rest on the remote unit",
            ),
            **LOCATION_OPTIONS,
        },
        name="cut placement",
    ),
)
def cut(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """A fixed prefix cut of the op order: one of the candidates ``split_point`` weighs.

    Ops up to and including ``after`` run on the device unit, the rest on the remote
    unit (``after: <input>`` offloads everything). Used to list the candidates of an
    adaptive app, or to pin a split found by a sweep.
    """
    policy = "cut"
    device, remote = resolve_locations(graph, oracle, source, options, policy)
    ops = graph.order
    after = options["after"]
    if after == INPUT_LABEL:
        k = 0
    elif after in ops:
        k = ops.index(after) + 1
    else:
        hint = nearest(after, ops)
        raise PlacementError(
            f"option 'after' names unknown op '{after}'"
            + (f" (did you mean '{hint}'?)" if hint else "")
            + f"; give an op of the model or '{INPUT_LABEL}'",
            policy,
        )
    assignment = _cut(ops, k, device, remote)
    for name, uid in assignment.items():
        reason = oracle.unsupported_reason(graph.op(name), uid)
        if reason is not None:
            raise PlacementError(f"'{uid}' cannot run it: {reason}", policy, name)
    notes = {"device": device, "remote": remote, "k": k, "cut_after": after}
    return Placement(assignment, ops, policy, source, notes)
