"""``socsim run --samples N``: propagate a scenario's distributions by Monte Carlo.

Sample ``i`` is the scenario with every distribution replaced by its ``i``-th draw
(:func:`~simulator.spec.uncertain.draw_document`, streams spawned from the scenario
seed), run at the same replicate as the nominal run: the samples differ only in their
parameters (common random numbers for arrivals and links). Each sample is a
:class:`SampleTask` of plain data run by a sweep executor (``serial``, ``processes``,
``dask``); its rows depend on nothing but the task, so the table is the same whatever
ran it.

Rows (``samples`` table), one per sample and app plus one ``app = "*"`` row per sample:
``latency_*_s`` over the app's completed requests (``*``: the run summary's),
``request_energy_j`` / ``request_device_energy_j`` the mean energy attributed to a
completed request (active power of its ops, radio tx/rx of its hops), and, on ``*`` rows
only, the summary's window figures ``energy_per_inference_j`` and
``device_energy_per_inference_j`` (idle power and radio tails included). Then one
column per uncertain field (its YAML path) with the value drawn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.errors import SocsimError
from simulator.spec.scenario import Scenario
from simulator.spec.uncertain import SampleKey, find_uncertain, path_text

#: Most samples one ``socsim run --samples`` may ask for (each is a whole run).
MAX_SAMPLES = 100_000
#: Figures of a ``samples`` row that get an interval.
METRICS = (
    "latency_mean_s",
    "latency_p50_s",
    "latency_p95_s",
    "request_energy_j",
    "request_device_energy_j",
    "energy_per_inference_j",
    "device_energy_per_inference_j",
)
#: Quantiles of an interval (percent): a 90 % central interval and the median.
QUANTILES = (5, 50, 95)
ALL_APPS = "*"


def check_samples(samples: int) -> int:
    """``--samples`` within 1 .. MAX_SAMPLES.

    Raises
    ------
    SocsimError
        Naming the option and the range.
    """
    if not 1 <= samples <= MAX_SAMPLES:
        raise SocsimError(f"--samples takes 1 to {MAX_SAMPLES:,}, got {samples}")
    return samples


def uncertain_fields(scenario: Scenario) -> list[tuple]:
    """Key paths of the distributions in the scenario's (preset-expanded) document.

    Raises
    ------
    SocsimError
        When there is none: every sample would repeat the nominal run.
    """
    from simulator.spec.definitions import SCENARIO

    paths = [path for path, _, _ in find_uncertain(SCENARIO, scenario.document)]
    if not paths:
        raise SocsimError(
            f"{scenario.source_file or scenario.name}: --samples draws the distributions of "
            "the scenario and its presets, and there is none; give a figure as "
            "{mean: m, sd: s} or {low: a, high: b} (docs/uncertainty.md lists the fields)"
        )
    return paths


@dataclass(frozen=True)
class SampleTask:
    """One Monte Carlo sample: the nominal document, where it came from, which sample."""

    document: Mapping[str, Any]
    base_dir: str
    source: str
    allow_dirs: tuple[str, ...]
    seed: int
    index: int
    replicate: int
    fields: tuple[tuple, ...]

    def scenario(self) -> Scenario:
        """The concrete scenario of this sample."""
        from simulator.spec.loader import parse_scenario

        return parse_scenario(
            self.document,
            base_dir=self.base_dir,
            source=self.source,
            allow_dirs=self.allow_dirs,
            sample=SampleKey(self.seed, self.index),
        )


def _value_at(document: Mapping, path: tuple) -> Any:
    here: Any = document
    for key in path:
        here = here[key]
    return here


def result_rows(result: Any, index: int) -> list[dict[str, Any]]:
    """The ``samples`` rows of one run (a :class:`~simulator.results.RunResult` with its
    ``requests`` table: trace ``summary`` or ``full``), parameter columns aside."""
    requests = result.requests
    done = requests[requests["status"] == "completed"]
    decisions = result.apps.groupby("app", sort=False)["decision"].agg(
        lambda labels: "|".join(dict.fromkeys(labels))
    )
    rows = []
    for app, decision in decisions.items():
        mine = done[done["app"] == app]
        latency = mine["latency_s"].to_numpy()
        rows.append(
            {
                "sample": index,
                "app": app,
                "decision": decision,
                "completed": len(mine),
                "latency_mean_s": float(latency.mean()) if len(latency) else math.nan,
                "latency_p50_s": float(np.percentile(latency, 50)) if len(latency) else math.nan,
                "latency_p95_s": float(np.percentile(latency, 95)) if len(latency) else math.nan,
                "request_energy_j": float(mine["energy_j"].mean()) if len(mine) else math.nan,
                "request_device_energy_j": float(mine["device_energy_j"].mean())
                if len(mine)
                else math.nan,
                "energy_per_inference_j": math.nan,
                "device_energy_per_inference_j": math.nan,
            }
        )
    summary = result.summary
    rows.append(
        {
            "sample": index,
            "app": ALL_APPS,
            "decision": summary["decision"],
            "completed": summary["completed"],
            "latency_mean_s": summary["latency_mean_s"],
            "latency_p50_s": summary["latency_p50_s"],
            "latency_p95_s": summary["latency_p95_s"],
            "request_energy_j": float(done["energy_j"].mean()) if len(done) else math.nan,
            "request_device_energy_j": float(done["device_energy_j"].mean())
            if len(done)
            else math.nan,
            "energy_per_inference_j": summary["energy_per_inference_j"],
            "device_energy_per_inference_j": summary["device_energy_per_inference_j"],
        }
    )
    return rows


def run_sample(task: SampleTask) -> list[dict[str, Any]]:
    """The rows of one sample: run its scenario (trace ``summary``), add the drawn values."""
    from simulator.engine import simulate

    scenario = task.scenario()
    result = simulate(scenario, replicate=task.replicate, trace="summary")
    drawn = {path_text(path): _value_at(scenario.document, path) for path in task.fields}
    return [{**row, **drawn} for row in result_rows(result, task.index)]


def run_sample_batch(tasks: Sequence[SampleTask]) -> list[dict[str, Any]]:
    """Rows of a batch of samples, in order (the unit of work an executor ships)."""
    return [row for task in tasks for row in run_sample(task)]


def sample_tasks(
    scenario: Scenario, samples: int, replicate: int = 0, allow_dirs: Sequence[str | Path] = ()
) -> list[SampleTask]:
    """The tasks of ``samples`` samples of ``scenario`` (a nominal, loaded scenario)."""
    fields = tuple(uncertain_fields(scenario))
    source = scenario.source_file or "<scenario>"
    base_dir = str(Path(source).parent) if scenario.source_file else "."
    return [
        SampleTask(
            scenario.document,
            base_dir,
            source,
            tuple(str(d) for d in allow_dirs),
            scenario.seed,
            index,
            replicate,
            fields,
        )
        for index in range(check_samples(samples))
    ]


def run_samples(
    scenario: Scenario,
    samples: int,
    replicate: int = 0,
    executor: str = "processes",
    workers: int | None = None,
    allow_dirs: Sequence[str | Path] = (),
) -> pd.DataFrame:
    """The ``samples`` table of ``samples`` Monte Carlo samples of ``scenario``.

    Parameters
    ----------
    scenario : Scenario
        The nominal scenario (loaded without a sample key).
    samples : int
        How many samples (1 .. :data:`MAX_SAMPLES`).
    replicate : int
        The replicate every sample runs at.
    executor : str
        A sweep executor (:data:`simulator.sweep.executors.EXECUTORS`).
    workers : int, optional
        Its worker processes (default: every core).

    Raises
    ------
    SocsimError
        When the scenario has no distribution, or ``samples`` is out of range.
    """
    from simulator.sweep.executors import EXECUTORS, default_workers

    tasks = sample_tasks(scenario, samples, replicate, allow_dirs)
    entry = EXECUTORS.get(executor)
    count = workers or default_workers()
    size = 1 if executor == "serial" else max(1, math.ceil(len(tasks) / (4 * count)))
    batches = [tasks[i : i + size] for i in range(0, len(tasks), size)]
    options = {"workers": workers} if workers and executor != "serial" else {}
    rows = [row for batch in entry.function(run_sample_batch, batches, **options) for row in batch]
    table = pd.DataFrame(rows)
    order = {app: i for i, app in enumerate(dict.fromkeys(table["app"]))}
    table = table.sort_values(
        ["sample", "app"], key=lambda c: c.map(order) if c.name == "app" else c, kind="stable"
    )
    return table.reset_index(drop=True)


def intervals(table: pd.DataFrame, nominal: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per app and metric: the nominal run's value, then mean, sd and the
    :data:`QUANTILES` over the samples (numpy's linear interpolation), and how many
    samples had a value."""
    nominal_of = {(row["app"], m): row[m] for row in nominal for m in METRICS}
    out = []
    for app, rows in table.groupby("app", sort=False):
        for metric in METRICS:
            base = {
                "app": app,
                "metric": metric,
                "nominal": nominal_of.get((app, metric), math.nan),
            }
            out.extend(_interval(base, rows[metric]))
    return pd.DataFrame(out)


def _interval(base: dict[str, Any], column: pd.Series) -> list[dict[str, Any]]:
    """``[{**base, mean, sd, p5, p50, p95, samples}]`` over the column's values, or
    ``[]`` when it has none (percentiles: numpy's linear interpolation)."""
    values = column.dropna().to_numpy(dtype=float)
    if not len(values):
        return []
    quantiles = np.percentile(values, QUANTILES)
    return [
        {
            **base,
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)) if len(values) > 1 else math.nan,
            **{f"p{q}": float(v) for q, v in zip(QUANTILES, quantiles, strict=True)},
            "samples": len(values),
        }
    ]


#: Figures of a sweep row that get an interval per sweep point.
SWEEP_METRICS = (
    "latency_mean_s",
    "latency_p95_s",
    "energy_per_inference_j",
    "device_energy_per_inference_j",
)


def sweep_intervals(table: pd.DataFrame, paths: Sequence[str], samples: int) -> pd.DataFrame:
    """Per sweep point (``point // samples``) and metric of :data:`SWEEP_METRICS`: mean,
    sd and :data:`QUANTILES` over the point's ok rows (its samples x replicates), with
    the point's swept values, its most frequent ``decision`` and the share of its
    samples that took it."""
    ok = table[table["status"] == "ok"]
    out = []
    for sweep_point, part in ok.groupby(ok["point"] // samples, sort=True):
        decisions = part["decision"].astype(str).value_counts()
        # most frequent; ties broken alphabetically so the table is deterministic
        decision = sorted(decisions[decisions == decisions.max()].index)[0]
        first = part.iloc[0]
        base = {"sweep_point": int(sweep_point), **{path: first[path] for path in paths}}
        base.update(decision=decision, decision_share=float(decisions[decision] / len(part)))
        for metric in SWEEP_METRICS:
            out.extend(_interval({**base, "metric": metric}, part[metric]))
    return pd.DataFrame(out)


#: Rows of the printed interval table (the CSV has every metric).
SHOWN = (
    "latency_mean_s",
    "latency_p95_s",
    "request_device_energy_j",
    "device_energy_per_inference_j",
)


def shown_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """The printed view of :func:`intervals`: a few metrics, in ms and mJ."""
    rows = table[table["metric"].isin(SHOWN)].copy()
    if table["app"].nunique() == 2:  # one app: its "*" rows repeat it but for the window
        window = rows["metric"].str.endswith("_per_inference_j")
        rows = rows[(rows["app"] != ALL_APPS) | window]
    columns = ["nominal", "mean", *(f"p{q}" for q in QUANTILES)]
    for column in columns:
        rows[column] = (rows[column] * 1e3).map(lambda v: f"{v:.4g}")
    rows["metric"] = rows["metric"].map(
        lambda m: (
            m.removesuffix("_s") + " (ms)" if m.endswith("_s") else m.removesuffix("_j") + " (mJ)"
        )
    )
    return rows[["app", "metric", *columns, "samples"]]


__all__ = [
    "ALL_APPS",
    "MAX_SAMPLES",
    "METRICS",
    "QUANTILES",
    "SampleTask",
    "check_samples",
    "intervals",
    "result_rows",
    "run_sample",
    "run_sample_batch",
    "run_samples",
    "sample_tasks",
    "shown_intervals",
    "sweep_intervals",
    "uncertain_fields",
]
