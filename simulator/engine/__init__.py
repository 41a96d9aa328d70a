"""The discrete-event engine (the only SimPy user) and :func:`simulate`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from simulator.engine.failures import FAILURE_COLUMNS
from simulator.engine.ledger import TRACE_LEVELS
from simulator.engine.loop import Progress
from simulator.engine.medium import MediumPort, SharedMedium
from simulator.engine.memory import MEMORY_COLUMNS, memory_table
from simulator.engine.pool import pooled_share
from simulator.engine.run import Engine, RunRecord
from simulator.engine.series import (
    POWER_COLUMNS,
    dvfs_level_table,
    power_table,
    temperature_table,
)
from simulator.engine.tables import (
    app_table,
    energy_table,
    placement_table,
    request_table,
)
from simulator.errors import PlacementError, SocsimError
from simulator.failures import down_within
from simulator.placement.members import Planner
from simulator.placement.memory_pool import pool_problems
from simulator.placement.plan import ExecutionPlan
from simulator.placement.requestio import with_request_io
from simulator.platform import CostOracle
from simulator.results.breakdown import energy_breakdown
from simulator.results.fleets import FLEET_COLUMNS, fleet_table, media_table
from simulator.results.run_result import BATTERY_COLUMNS, THERMAL_COLUMNS, RunResult, summarize
from simulator.spec.scenario import Scenario


def plan_replicas(
    scenario: Scenario, oracle: CostOracle | None = None
) -> dict[str, tuple[ExecutionPlan, ...]]:
    """Place every app of ``scenario`` (each of its replicas) and compile the plans (pure).

    Raises
    ------
    PlacementError
        When a policy fails or returns an infeasible placement, or a node's weights do
        not fit its memory pool (``memory_policy: refuse``, docs/memory.md).
    """
    oracle = oracle or CostOracle(scenario.platform)
    plans = {}
    planner = Planner(scenario, oracle)  # identical fleet members: one decision
    for entry in scenario.workload:
        mine = []
        for spec in scenario.placements_for(entry):
            plan = planner.plan(entry, spec)
            mine.append(with_request_io(plan, entry.input_bytes, entry.response_bytes))
        plans[entry.app] = tuple(mine)
    for problem in pool_problems(scenario.platform, plans):  # the first; validate lists all
        raise PlacementError(f"app '{problem.app}': {problem.message}")
    return plans


def plan_apps(scenario: Scenario, oracle: CostOracle | None = None) -> dict[str, ExecutionPlan]:
    """The plan of every app's (first) placement; see :func:`plan_replicas`."""
    return {app: plans[0] for app, plans in plan_replicas(scenario, oracle).items()}


def simulate(
    scenario: Scenario,
    replicate: int = 0,
    trace: str = "full",
    progress: Progress | None = None,
    plans: Mapping[str, tuple[ExecutionPlan, ...]] | None = None,
) -> RunResult:
    """Run one replicate of ``scenario`` and return its result tables.

    Parameters
    ----------
    scenario : Scenario
    replicate : int
        Replicate index; with the scenario seed it fixes every random stream, so the
        same (scenario, seed, replicate) gives identical tables.
    trace : {"full", "summary", "none"}
        ``full`` keeps every op and transfer row; ``summary`` keeps the request rows
        and the per-unit and per-link aggregates but no op, transfer or power row;
        ``none`` keeps only aggregates, so memory does not grow with the number of ops
        (and a request's record is released when it completes or is dropped: 8 bytes
        per request remain, its latency, for the exact percentiles).
        Every aggregate (``summary``, ``units``, ``energy``, ``links``...) is the same
        at every level.
    progress : callable, optional
        ``progress(simulated_s, issued, completed)``, called at most once a second of
        wall clock after the first 3 s (``socsim run`` prints it to stderr).
    plans : mapping, optional
        :func:`plan_replicas` of this very scenario, when the caller made them already
        (a sweep reads the placements for its indicators): not placed a second time.

    Returns
    -------
    RunResult

    Raises
    ------
    PlacementError
        When an app cannot be placed.
    SimulationError
        When the run breaks an invariant (a bug, not a user error); a
        :class:`~simulator.errors.RunFailedError` when an exception escapes the engine,
        naming the scenario and the simulated time.
    """
    if trace not in TRACE_LEVELS:
        raise SocsimError(f"unknown trace level '{trace}'; levels: {', '.join(TRACE_LEVELS)}")
    oracle = CostOracle(scenario.platform)
    if plans is None:
        plans = plan_replicas(scenario, oracle)
    record = Engine(
        scenario,
        plans,
        oracle,
        replicate,
        keep_rows=trace == "full",
        keep_records=trace != "none",
        progress=progress,
    ).run()
    ledger = record.ledger
    figures = record.requests.figures()
    start_s = figures.first_arrival_s if figures.issued else 0.0
    end_s = figures.last_finish_s if len(figures.latency_s) else start_s
    if record.stopped_at_s is not None:  # a battery ran out: everything ends then
        end_s = record.stopped_at_s
    # the window runs until the last completion or until every radio is idle again
    # (a cellular tail drains the battery after the last byte)
    span_s = end_s - start_s
    if record.stopped_at_s is None:
        # ... and until the last op ends: an op of a request given up (transfer timeout)
        # or of an abandoned attempt runs to its end, possibly after the last completion
        # (found by tests/engine/test_random_invariants.py: its energy lay outside the
        # window, so the units' energy exceeded the integral of their power)
        end_s = max([end_s, ledger.last_op_end_s, *(r.last_change_s for r in record.radios)])
    run_end_s = end_s  # thermal nodes and batteries are read at the run's end
    if scenario.energy_window_s is not None:  # energy over exactly this interval
        start_s, end_s = scenario.energy_window_s
    for radio in record.radios:
        radio.close(max(end_s, run_end_s))
    window_s = end_s - start_s
    ops = ledger.op_table()
    down_s = {uid: down_within(spans, start_s, end_s) for uid, spans in record.down.items()}
    units = ledger.unit_table(window_s, span_s, down_s)
    radios = ledger.radio_table(record.radios, (start_s, end_s))
    energy = energy_table(units, radios, scenario, start_s, end_s)
    radio_states = ledger.radio_state_table(record.radios, (start_s, end_s))
    apps = app_table(scenario, plans, oracle)
    summary = summarize(
        figures, energy, apps, (start_s, end_s), scenario.name, scenario.seed, replicate
    )
    requests = request_table(record, scenario.seed, replicate)  # empty under trace none
    power = (
        power_table(
            ops,
            ledger.partial_rows,
            record.radios,
            scenario.platform,
            (start_s, end_s),
            pooled_share(ops, plans, scenario.platform),
            record.down,
        )
        if trace == "full"
        else pd.DataFrame(columns=list(POWER_COLUMNS))
    )
    links = ledger.link_table()
    return RunResult(
        requests=requests,
        ops=ops,
        transfers=ledger.transfer_table(),
        units=units,
        energy=energy,
        apps=apps,
        placement=placement_table(scenario, plans, oracle),
        radio_states=radio_states,
        power=power,
        energy_breakdown=energy_breakdown(energy, radio_states),
        dvfs_levels=dvfs_level_table(record.dvfs, scenario.platform),
        temperature=temperature_table(record.thermal, run_end_s),
        batteries=pd.DataFrame(
            [battery.row(run_end_s) for battery in record.batteries.values()],
            columns=BATTERY_COLUMNS,
        ),
        thermal=pd.DataFrame(
            [heat.finish(run_end_s) for heat in record.thermal.values()],
            columns=THERMAL_COLUMNS,
        ),
        summary=summary,
        document=dict(scenario.document),
        links=links,
        fleets=_fleets(scenario, record, energy),
        media=_media(scenario, record, links, window_s),
        trace=trace,
        failures=pd.DataFrame(list(record.failures), columns=list(FAILURE_COLUMNS)),
        memory=memory_table(record.memory_log, ledger.weights, scenario.platform)
        if trace == "full" and scenario.memory_series
        else pd.DataFrame(columns=list(MEMORY_COLUMNS)),
    )


def _fleets(scenario: Scenario, record: RunRecord, energy: pd.DataFrame) -> pd.DataFrame:
    """The ``fleets`` table (empty without fleets)."""
    fleets = scenario.fleets
    if not fleets.apps:
        return pd.DataFrame(columns=FLEET_COLUMNS)
    names, codes, latency_s = record.requests.by_app()
    return fleet_table(fleets.apps, fleets.members, names, codes, latency_s, energy)


def _media(
    scenario: Scenario, record: RunRecord, links: pd.DataFrame, window_s: float
) -> pd.DataFrame:
    """The ``media`` table (empty without shared links)."""
    media: dict[str, SharedMedium] = {}
    for port in record.links.values():
        if isinstance(port, MediumPort):
            media.setdefault(port.medium.name, port.medium)
    rows = []
    for name, medium in media.items():
        station_links = [
            link for link in scenario.platform.network.links.values() if link.medium == name
        ]
        hub = station_links[0].b  # every station link runs station -> access point
        rows.append(
            (name, hub, [link.name for link in station_links], medium.fairness, medium.busy_s)
        )
    return media_table(rows, links, window_s)


__all__ = ["Engine", "RunRecord", "plan_apps", "plan_replicas", "simulate"]
