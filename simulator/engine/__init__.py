"""The discrete-event engine (the only SimPy user) and :func:`simulate`."""

from __future__ import annotations

import pandas as pd

from simulator.engine.run import Engine
from simulator.placement.base import place
from simulator.placement.estimate import estimate
from simulator.placement.plan import ExecutionPlan, compile_plan
from simulator.platform import CostOracle
from simulator.results.run_result import RunResult, summarize
from simulator.spec.scenario import Scenario


def plan_apps(scenario: Scenario, oracle: CostOracle | None = None) -> dict[str, ExecutionPlan]:
    """Place every app of ``scenario`` and compile its execution plan (pure).

    Raises
    ------
    PlacementError
        When a policy fails or returns an infeasible placement.
    """
    oracle = oracle or CostOracle(scenario.platform)
    plans = {}
    cache: dict = {}
    for entry in scenario.workload:
        spec = scenario.placement_for(entry)
        key = (entry.model, entry.source, id(spec))  # one plan per (model, source, spec)
        if key not in cache:
            graph = scenario.models[entry.model]
            placement = place(spec, graph, oracle, entry.source)
            cache[key] = compile_plan(placement.graph or graph, placement, oracle)
        plans[entry.app] = cache[key]
    return plans


def simulate(scenario: Scenario, replicate: int = 0) -> RunResult:
    """Run one replicate of ``scenario`` and return its result tables.

    Parameters
    ----------
    scenario : Scenario
    replicate : int
        Replicate index; with the scenario seed it fixes every random stream, so the
        same (scenario, seed, replicate) gives identical tables.

    Returns
    -------
    RunResult

    Raises
    ------
    PlacementError
        When an app cannot be placed.
    SimulationError
        When the run breaks an invariant (a bug, not a user error).
    """
    oracle = CostOracle(scenario.platform)
    plans = plan_apps(scenario, oracle)
    engine = Engine(scenario, plans, oracle, replicate)
    engine.run()
    ledger = engine.ledger
    requests = _request_table(engine, scenario.seed, replicate)
    start_s = float(requests["arrival_s"].min()) if len(requests) else 0.0
    end_s = float(requests["finish_s"].max()) if len(requests) else 0.0
    window_s = end_s - start_s
    units = ledger.unit_table(window_s)
    radios = ledger.radio_table(window_s)
    energy = _energy_table(units, radios, scenario, start_s, end_s)
    apps = _app_table(scenario, plans, oracle)
    summary = summarize(
        requests, energy, apps, (start_s, end_s), scenario.name, scenario.seed, replicate
    )
    return RunResult(
        requests=requests,
        ops=ledger.op_table(),
        transfers=ledger.transfer_table(),
        units=units,
        energy=energy,
        apps=apps,
        placement=_placement_table(scenario, plans, oracle),
        summary=summary,
        document=dict(scenario.document),
    )


def _request_table(engine: Engine, seed: int, replicate: int) -> pd.DataFrame:
    rows = []
    for r in engine.requests:
        entry = r.app.entry
        latency = r.finish_s - r.arrival_s
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
                "deadline_met": (latency <= deadline) if deadline is not None else None,
                "status": "completed",
                "energy_j": r.energy_j,
                "device_energy_j": r.device_energy_j,
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
        "energy_j",
        "device_energy_j",
        "seed",
        "replicate",
    ]
    return pd.DataFrame(rows, columns=columns)


def _energy_table(units, radios, scenario: Scenario, start_s: float, end_s: float) -> pd.DataFrame:
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


def _app_table(
    scenario: Scenario, plans: dict[str, ExecutionPlan], oracle: CostOracle
) -> pd.DataFrame:
    rows = []
    for entry in scenario.workload:
        plan = plans[entry.app]
        predicted = estimate(plan, oracle)
        rows.append(
            {
                "app": entry.app,
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


def _placement_table(
    scenario: Scenario, plans: dict[str, ExecutionPlan], oracle: CostOracle
) -> pd.DataFrame:
    rows = [
        {
            "app": entry.app,
            "op": op,
            "kind": kind,
            "unit": uid,
            "node": oracle.platform.node_of(uid).name,
            "position": position,
        }
        for entry in scenario.workload
        for position, (op, kind, uid) in enumerate(
            zip(plans[entry.app].ops, plans[entry.app].kinds, plans[entry.app].units, strict=True)
        )
    ]
    return pd.DataFrame(rows, columns=["app", "op", "kind", "unit", "node", "position"])


__all__ = ["Engine", "plan_apps", "simulate"]
