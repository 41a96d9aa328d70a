"""The result tables simulate() builds from the engine's books (documented columns)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from simulator.engine.run import RunRecord
from simulator.placement.estimate import estimate
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle
from simulator.spec.scenario import Scenario

REQUEST_COLUMNS = (
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
)


def request_table(record: RunRecord, seed: int, replicate: int) -> pd.DataFrame:
    """One row per request, built column by column from the request records."""
    records = record.requests.records()
    if not records:
        return pd.DataFrame([], columns=list(REQUEST_COLUMNS))
    entries = [r.app.entry for r in records]
    finish_s = [r.finish_s for r in records]
    done = [f is not None for f in finish_s]
    latency_s = [
        f - r.arrival_s if f is not None else math.nan
        for f, r in zip(finish_s, records, strict=True)
    ]
    deadline_s = [entry.deadline_s for entry in entries]
    columns = {
        "request_id": [r.rid for r in records],
        "app": [entry.app for entry in entries],
        "model": [entry.model for entry in entries],
        "source": [entry.source for entry in entries],
        "arrival_s": [r.arrival_s for r in records],
        "start_s": [r.first_start_s for r in records],
        "finish_s": finish_s,
        "latency_s": latency_s,
        "deadline_s": deadline_s,
        "deadline_met": [
            (latency <= deadline) if deadline is not None and d else None
            for latency, deadline, d in zip(latency_s, deadline_s, done, strict=True)
        ],
        "status": ["completed" if d else "dropped" for d in done],
        "drop_reason": [
            "" if d else (r.drop_reason or record.stop_reason)
            for r, d in zip(records, done, strict=True)
        ],
        "energy_j": [r.energy_j for r in records],
        "device_energy_j": [r.device_energy_j for r in records],
        "replica": [r.rep.index for r in records],
        "decision": [r.plan.label for r in records],
        "fell_back": [r.fell_back for r in records],
        "seed": [seed] * len(records),
        "replicate": [replicate] * len(records),
    }
    names = list(REQUEST_COLUMNS)
    if record.handovers is not None:  # a mobile link: what handovers did to each request
        notes = record.handovers.notes
        columns["handover"] = ["; ".join(notes.get(r.rid, ())) for r in records]
        names.insert(names.index("fell_back") + 1, "handover")
    if any(r.app.exits is not None for r in records):  # a model with early exits
        columns.update(exit_columns(records))
        names += EXIT_COLUMNS
    return pd.DataFrame(columns, columns=names)


#: The requests table's columns when a model of the run has early exits.
EXIT_COLUMNS = ("exit", "exit_accuracy_top1")


def exit_columns(records) -> dict[str, list]:
    """Per request, the exit it took ("" for an app without exits) and that exit's
    top-1 (%, NaN unknown)."""
    names, accuracy = [], []
    for r in records:
        exits = r.app.exits
        if exits is None or r.exit is None:
            names.append("")
            accuracy.append(math.nan)
            continue
        names.append(exits.names[r.exit])
        top1 = exits.accuracy[r.exit]
        accuracy.append(math.nan if top1 is None else top1)
    return {"exit": names, "exit_accuracy_top1": accuracy}


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
