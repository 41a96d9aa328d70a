"""What a worker does with one task: run the point (engine or fast path), return a flat row.

Everything here is a top-level function of plain data, so that spawned processes and Dask
workers can import and call it. A failing point becomes a row with ``status = "error"``
and the message; only interrupts (``KeyboardInterrupt``) stop a batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from simulator.engine import plan_replicas, simulate
from simulator.graph.exits import exits_of
from simulator.hardware.units import ComputeUnit
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.plugins import import_plugins
from simulator.results.fleets import LOAD_KEYS, load_figures
from simulator.score.card import peak_memory
from simulator.score.indicators import INDICATOR_KEYS, app_flexibility, scenario_indicators
from simulator.spec.modelcache import MODEL_CACHE, BoundedCache, exact_key
from simulator.spec.scenario import Scenario

#: Fast-path plans kept per process. An entry is a label and a latency, but its key holds
#: the platform's records and the model graph alive, so this also bounds the graphs kept
#: beyond the model cache's own bound.
MAX_PLANS = 64
#: ``(decision label, latency_s, flexibility record)`` of the fast path by the exact inputs
#: of its plan (:func:`plan_inputs`): a sweep over a deadline or a seed places its model once.
PLAN_CACHE: BoundedCache[tuple[str, float, dict]] = BoundedCache(MAX_PLANS)

#: Keys of :func:`simulator.results.run_result.summarize` in a sweep row, after the fixed
#: columns (``seed``, ``replicate`` and ``decision`` are among those). A test keeps this
#: list equal to the summary's keys.
SUMMARY_KEYS = (
    "scenario",
    "requests",
    "completed",
    "dropped",
    "latency_mean_s",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "latency_max_s",
    "window_start_s",
    "window_end_s",
    "throughput_rps",
    "energy_j",
    "device_energy_j",
    "edge_energy_j",
    "cloud_energy_j",
    "energy_per_inference_j",
    "device_energy_per_inference_j",
    "inferences_per_j",
    "device_inferences_per_j",
    "deadline_met_rate",
)
FIXED_COLUMNS = ("point", "replicate", "seed", "status", "error", "decision")


#: Every numeric column of a row: the summary's, then the three indicators it lacks
#: (accuracy, peak memory, flexibility: :mod:`simulator.score.indicators`), then how
#: loaded the busiest shared medium and the busiest edge, cloud and device units were
#: (:func:`~simulator.results.fleets.load_figures`: why latency climbs in a fleet sweep).
ROW_FIGURES = (*SUMMARY_KEYS, *INDICATOR_KEYS, *LOAD_KEYS)


def columns(paths: Sequence[str]) -> list[str]:
    """The sweep table's columns: ``point``, the swept paths, the fixed and summary keys,
    the indicators (``accuracy_top1``, ``peak_memory_bytes``, ``flexibility``), then the
    load figures (:data:`~simulator.results.fleets.LOAD_KEYS`)."""
    return ["point", *paths, *FIXED_COLUMNS[1:], *ROW_FIGURES]


@dataclass(frozen=True)
class Task:
    """One run of a sweep: a point's values and seed, its replicate, and how to resolve it.

    The point's scenario is made where the task runs (:meth:`resolve`), by the sweep's
    :class:`~simulator.sweep.points.PointResolver`, unless ``scenario`` is given.
    """

    point: int
    replicate: int
    values: Mapping[str, Any]
    seed: int
    resolver: Any = None  # a PointResolver (typed loosely: points.py imports this module)
    fast: bool = False
    scenario: Scenario | None = None

    def resolve(self) -> Scenario:
        """The point's validated scenario.

        Raises
        ------
        ScenarioError
            When the point's values are invalid together.
        """
        if self.scenario is not None:
            return self.scenario
        return self.resolver.scenario(self.values, self.seed)


def fast_path_applies(scenario: Scenario) -> bool:
    """A lone request on an otherwise idle, constant platform: one app, ``count: 1``, one
    placement, no DVFS governor but ``performance``, no thermal model or battery, no
    execution-time variation or background load, no bandwidth trace or outage, no failure
    — where the list-schedule estimate *is* the engine's latency (a memory pool too small
    for the request is the same placement error: ``plan_replicas`` checks it)."""
    if len(scenario.workload) != 1 or scenario.failures:
        return False
    entry = scenario.workload[0]
    if entry.count != 1 or entry.duration_s is not None or len(scenario.placements_for(entry)) != 1:
        return False
    if exits_of(scenario.models[entry.model]) and scenario.placement_for(entry).name != "edgent":
        return False  # the request draws its exit: the whole model's estimate is not its
    nodes = scenario.platform.nodes.values()
    if any(n.thermal is not None or n.battery_j is not None for n in nodes):
        return False
    # a unit pinned at its top point runs at the speed the estimate assumes
    if any(u.dvfs is not None and u.governor != "performance" for n in nodes for u in n.units):
        return False
    # drawn or background-stretched op times are the run's, not the estimate's mean
    if any(_stochastic(u) for n in nodes for u in n.units):
        return False
    links = scenario.platform.network.links.values()
    return not any(
        link.bandwidth_trace or link.reverse_bandwidth_trace or link.outages for link in links
    )


def _stochastic(unit: ComputeUnit) -> bool:
    """Whether the unit's op times are drawn or stretched (docs/stochastic.md)."""
    return unit.background is not None or any(v.varies for v in unit.variation.values())


def fast_summary(scenario: Scenario, replicate: int) -> dict[str, Any]:
    """The summary of a lone-request run from the analytic estimate, without the engine.

    Latency, throughput, deadline and decision equal the engine's; the energy figures and
    the window are NaN (the estimate counts no idle power, and the window's end depends on
    radio tails the engine follows).
    """
    entry = scenario.workload[0]
    label, latency_s, flex = _cached(plan_inputs(scenario), lambda: _fast_plan(scenario))
    summary: dict[str, Any] = dict.fromkeys(SUMMARY_KEYS, math.nan)
    met = math.nan if entry.deadline_s is None else float(latency_s <= entry.deadline_s)
    summary.update(
        scenario=scenario.name,
        seed=scenario.seed,
        replicate=replicate,
        requests=1,
        completed=1,
        dropped=0,
        latency_mean_s=latency_s,
        latency_p50_s=latency_s,
        latency_p95_s=latency_s,
        latency_p99_s=latency_s,
        latency_max_s=latency_s,
        throughput_rps=1.0 / latency_s if latency_s > 0 else math.nan,
        deadline_met_rate=met,
        decision=label,
    )
    # no engine ran: no memory peak (NaN), accuracy and flexibility as the engine's row;
    # no unit or medium was followed: the load figures are NaN
    summary.update(scenario_indicators(scenario, math.nan, {entry.app: flex}))
    summary.update(dict.fromkeys(LOAD_KEYS, math.nan))
    return summary


def _fast_plan(scenario: Scenario) -> tuple[str, float, dict]:
    """The lone request's plan label, estimated latency (s) and flexibility record."""
    oracle = CostOracle(scenario.platform)
    entry = scenario.workload[0]
    plan = plan_replicas(scenario, oracle)[entry.app][0]
    flex = app_flexibility(scenario, entry, oracle, plan.placement)
    return plan.label, estimate(plan, oracle).latency_s, flex


def plan_inputs(scenario: Scenario) -> tuple | None:
    """Everything the fast path's plan depends on, compared by value: the platform's nodes
    and links (frozen records: units, DVFS points, predictors and radios included), the
    model graph itself (held, compared by identity: the model cache hands out one graph
    per recipe), the source node and the placement policy with its options. None (no
    caching) when a part cannot be hashed."""
    entry = scenario.workload[0]
    spec = scenario.placements_for(entry)[0]
    platform = scenario.platform
    key = (
        tuple(platform.nodes.values()),
        tuple(platform.network.links.values()),
        scenario.models[entry.model],
        entry.source,
        entry.input_bytes,  # the app's request and response sizes (docs/requests.md)
        entry.response_bytes,
        spec.policy,
        exact_key(spec.options),
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


@contextmanager
def no_caches() -> Iterator[None]:
    """Inside the block, every point builds its models and plans afresh (forked workers
    inherit the switch): what the tests and the bench compare the caches with."""
    with MODEL_CACHE.disabled(), PLAN_CACHE.disabled():
        yield


def _cached(
    key: tuple | None, build: Callable[[], tuple[str, float, dict]]
) -> tuple[str, float, dict]:
    return build() if key is None else PLAN_CACHE.get(key, build)


def _engine_summary(scenario: Scenario, replicate: int) -> dict[str, Any]:
    """The run summary, the three indicators it lacks and the load figures, the apps
    placed once (the engine runs the plans the indicators read)."""
    oracle = CostOracle(scenario.platform)
    plans = plan_replicas(scenario, oracle)
    # only the summary is kept: no per-op rows (the same figures, less memory)
    result = simulate(scenario, replicate=replicate, trace="none", plans=plans)
    flex = {
        entry.app: app_flexibility(scenario, entry, oracle, plans[entry.app][0].placement)
        for entry in scenario.workload
    }
    return {
        **result.summary,
        **scenario_indicators(scenario, peak_memory(result.units), flex),
        **load_figures(result.units, result.media),
    }


def run_task(task: Task) -> dict[str, Any]:
    """The sweep row of one task: its point, values, seed, status and summary.

    Any exception of the point (its scenario, placement or run) becomes an error row.
    """
    row: dict[str, Any] = {"point": task.point, **task.values}
    row.update(replicate=task.replicate, seed=task.seed, status="ok", error="")
    name = task.scenario.name if task.scenario is not None else task.resolver.name
    try:
        if task.scenario is not None:  # made in another process: import what it names
            import_plugins(task.scenario.plugins)
        scenario = task.resolve()
        if task.fast and fast_path_applies(scenario):
            summary = fast_summary(scenario, task.replicate)
        else:
            summary = _engine_summary(scenario, task.replicate)
    except Exception as exc:
        row.update(status="error", error=f"{type(exc).__name__}: {exc}", decision="")
        row.update(dict.fromkeys(ROW_FIGURES, math.nan))
        row["scenario"] = name
        return row
    row["decision"] = summary["decision"]
    row.update({key: summary[key] for key in ROW_FIGURES})
    return row


def run_batch(
    tasks: Sequence[Task], run: Callable[[Task], dict[str, Any]] = run_task
) -> list[dict[str, Any]]:
    """Rows of a batch of tasks, in order (the unit of work an executor ships)."""
    return [run(task) for task in tasks]
