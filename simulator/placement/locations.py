"""The two locations of a partitioning policy: options, defaults and resolution (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import ModelGraph
from simulator.placement.conditions import NOMINAL, Conditions, declared_load
from simulator.placement.levelreplay import back_to_back_s
from simulator.placement.objectives import (
    Objective,
    candidate_nodes,
    candidate_units,
    objective_of,
)
from simulator.platform import CostOracle
from simulator.schema import Field, Number, Ref

LOCATION_OPTIONS: dict[str, Field] = {
    "device": Field(
        Ref("unit"),
        default=None,
        doc="the device-side unit ('node.unit' or a bare name on the source node); "
        "default: the source node's fastest unit that runs every op (if none does: the one "
        "that runs the most ops)",
    ),
    "remote": Field(
        Ref("unit"),
        default=None,
        doc="the remote unit as 'node.unit' (give this or 'node')",
    ),
    "node": Field(
        Ref("node"),
        default=None,
        doc="the remote node, whose fastest unit that runs every op (if none does: the one "
        "that runs the most ops) is used; default: the only node other than the source",
    ),
}

#: the load a static two-location policy is told of (``split_point``, ``min_cut``)
LOAD_OPTIONS: dict[str, Field] = {
    "remote_queued_ms": Field(
        Number("ms", 1e-3, ge=0),
        default=0.0,
        to="remote_queued_s",
        doc="work already queued or reserved on the remote unit: the request's first op "
        "there starts no earlier (docs/placement.md#load-aware-estimates)",
    ),
}

INPUT_LABEL = "<input>"


def load_conditions(oracle: CostOracle, remote: str, options: Mapping[str, Any]) -> Conditions:
    """What a static policy assumes of the load: the nodes' ``load_factor`` and the
    ``remote_queued_ms`` option (:data:`NOMINAL` when neither is given)."""
    load = declared_load(oracle.platform)
    queued_s = options.get("remote_queued_s", 0.0)
    if not load and not queued_s:
        return NOMINAL
    return Conditions(unit_free_s={remote: queued_s} if queued_s else {}, load_factor=load)


# -- locations -----------------------------------------------------------------------------
def _resolve(oracle: CostOracle, ref: str, source: str, policy: str) -> str:
    try:
        return oracle.platform.resolve_unit(ref, source)
    except SocsimError as exc:
        raise PlacementError(str(exc), policy) from None


def _default_unit(
    graph: ModelGraph, oracle: CostOracle, units: list[str], allowed: set[str]
) -> str | None:
    """The unit of ``units`` (and ``allowed``) that runs the most ops, then the fastest.

    So: the fastest unit that runs every op when there is one; otherwise the one that
    can take the largest part of the model (the other side takes the rest). Fastest is a
    lone request's time of those ops back to back, a DVFS unit at its governor's levels
    (:func:`~simulator.placement.levelreplay.back_to_back_s`). Ties by unit order; None when
    no unit is allowed or none runs any op.
    """
    best, best_key = None, None
    for uid in units:
        if uid not in allowed:
            continue
        able = [op for op in graph if oracle.supports(op, uid)]
        if not able:
            continue
        key = (-len(able), back_to_back_s(oracle, able, uid))  # at its governor's levels
        if best_key is None or key < best_key:
            best, best_key = uid, key
    return best


def resolve_locations(
    graph: ModelGraph,
    oracle: CostOracle,
    source: str,
    options: Mapping[str, Any],
    policy: str,
) -> tuple[str, str]:
    """The (device, remote) unit ids the options name, with their defaults.

    Raises
    ------
    PlacementError
        On unknown or excluded units, both ``remote`` and ``node`` given, no default
        available, or device == remote.
    """
    platform = oracle.platform
    allowed = set(candidate_units(oracle, source, options, policy, named=True))
    reachable = platform.network.reachable(source)

    def unreachable(node: str) -> PlacementError:
        return PlacementError(
            f"no link joins node '{node}' to the source node '{source}': the request's "
            "data cannot get there; add a link or name another node",
            policy,
        )

    def usable(uid: str, key: str) -> str:
        unit_node = platform.node_of(uid).name
        if unit_node not in reachable:
            raise unreachable(unit_node)
        if uid not in allowed:
            raise PlacementError(f"option '{key}' names '{uid}', which 'exclude' lists", policy)
        return uid

    if options.get("device"):
        device = usable(_resolve(oracle, options["device"], source, policy), "device")
    else:
        found = _default_unit(graph, oracle, list(platform.units_of(source)), allowed)
        if found is None:
            raise PlacementError(
                f"no usable unit of the source node '{source}' runs any op; "
                "name the device unit with option 'device'",
                policy,
            )
        device = found

    remote_ref, node = options.get("remote"), options.get("node")
    if remote_ref and node:
        raise PlacementError("give 'remote' (a unit) or 'node', not both", policy)
    if remote_ref:
        remote = usable(_resolve(oracle, remote_ref, source, policy), "remote")
    else:
        if not node:
            # the nodes a policy may choose (no private one: another fleet member)
            choosable = candidate_nodes(platform, source)
            others = [name for name in platform.nodes if name != source and name in choosable]
            if not others:
                raise PlacementError(
                    f"a device/remote split needs a second node that a link joins to the "
                    f"source node '{source}', and there is none (nodes: "
                    f"{', '.join(platform.nodes)}); to spread a model over the units of "
                    "one node, use heft or co_execute",
                    policy,
                )
            if len(others) != 1:
                raise PlacementError(
                    f"name the remote side with 'node' or 'remote' (nodes a link joins to "
                    f"'{source}': {', '.join(others)})",
                    policy,
                )
            node = others[0]
        if node not in platform.nodes:
            raise PlacementError(
                f"unknown node '{node}'; nodes: {', '.join(platform.nodes)}", policy
            )
        if node not in reachable:
            raise unreachable(node)
        found = _default_unit(graph, oracle, list(platform.units_of(node)), allowed - {device})
        if found is None:
            raise PlacementError(
                f"no usable unit of node '{node}' runs any op; name one with option 'remote'",
                policy,
            )
        remote = found
    if remote == device:
        raise PlacementError(f"device and remote are the same unit '{device}'", policy)
    return device, remote


def location_objective(options: Mapping[str, Any], policy: str) -> Objective:
    try:
        return objective_of(options)
    except PlacementError as exc:
        raise PlacementError(exc.message, policy) from None
