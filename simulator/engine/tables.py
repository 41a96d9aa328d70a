"""The result tables simulate() builds from the engine's books (documented columns)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from simulator.engine.run import Engine
from simulator.placement.estimate import estimate
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle
from simulator.spec.scenario import Scenario


def request_table(engine: Engine, seed: int, replicate: int) -> pd.DataFrame:
    rows = []
    for r in engine.requests.records():
        entry = r.app.entry
        done = r.finish_s is not None
        latency = r.finish_s - r.arrival_s if done else math.nan
        deadline = entry.deadline_s
        rows.append(
            {
                "request_id": r.rid,
                "app": entry.app,
                "model": entry.model,
                "source": entry.source,
                "arrival_s": r.arrival_s,
                "start_s": r.first_start_s,
                "finish_s": r.finish_s,
                "latency_s": latency,
                "deadline_s": deadline,
                "deadline_met": (latency <= deadline) if deadline is not None and done else None,
                "status": "completed" if done else "dropped",
                "drop_reason": "" if done else (r.drop_reason or engine.stop_reason),
                "energy_j": r.energy_j,
                "device_energy_j": r.device_energy_j,
                "replica": r.rep.index,
                "decision": r.plan.label,
                "fell_back": r.fell_back,
                "seed": seed,
                "replicate": replicate,
            }
        )
    columns = [
        "request_id",
        "app",
        "model",
        "source",
        "arrival_s",
        "start_s",
        "finish_s",
        "latency_s",
        "deadline_s",
        "deadline_met",
        "status",
        "drop_reason",
        "energy_j",
        "device_energy_j",
        "replica",
        "decision",
        "fell_back",
        "seed",
        "replicate",
    ]
    return pd.DataFrame(rows, columns=columns)


def energy_table(units, radios, scenario: Scenario, start_s: float, end_s: float) -> pd.DataFrame:
    rows = [
        {
            "node": u.node,
            "component": u.unit,
            "kind": "compute",
            "role": u.role,
            "idle_energy_j": u.idle_energy_j,
            "active_energy_j": u.active_energy_j,
            "energy_j": u.energy_j,
        }
        for u in units.itertuples()
    ]
    rows += [
        {
            "node": r.node,
            "component": f"radio:{r.link}",
            "kind": "radio",
            "role": scenario.platform.role_of(r.node),
            "idle_energy_j": r.idle_energy_j,
            "active_energy_j": r.active_energy_j,
            "energy_j": r.energy_j,
        }
        for r in radios.itertuples()
    ]
    table = pd.DataFrame(rows)
    table["window_start_s"] = start_s
    table["window_end_s"] = end_s
    return table


def app_table(
    scenario: Scenario, plans: Mapping[str, tuple[ExecutionPlan, ...]], oracle: CostOracle
) -> pd.DataFrame:
    """One row per app and replica: decision, units and contention-free predictions."""
    rows = []
    for entry in scenario.workload:
        for replica, plan in enumerate(plans[entry.app]):
            predicted = estimate(plan, oracle)
            rows.append(
                {
                    "app": entry.app,
                    "replica": replica,
                    "model": entry.model,
                    "source": entry.source,
                    "policy": plan.placement.policy,
                    "decision": plan.label,
                    "units_used": ",".join(dict.fromkeys(plan.units)),
                    "ops": plan.size,
                    "predicted_latency_s": predicted.latency_s,
                    "predicted_energy_j": predicted.energy_j,
                    "bytes_sent": predicted.bytes_sent,
                }
            )
    return pd.DataFrame(rows)


def placement_table(
    scenario: Scenario, plans: Mapping[str, tuple[ExecutionPlan, ...]], oracle: CostOracle
) -> pd.DataFrame:
    """One row per app, replica and op: where it runs and its place in the order."""
    rows = [
        {
            "app": entry.app,
            "replica": replica,
            "op": op,
            "kind": kind,
            "unit": uid,
            "node": oracle.platform.node_of(uid).name,
            "position": position,
        }
        for entry in scenario.workload
        for replica, plan in enumerate(plans[entry.app])
        for position, (op, kind, uid) in enumerate(
            zip(plan.ops, plan.kinds, plan.units, strict=True)
        )
    ]
    columns = ["app", "replica", "op", "kind", "unit", "node", "position"]
    return pd.DataFrame(rows, columns=columns)
