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
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.errors import SocsimError
from simulator.spec.scenario import Scenario
from simulator.spec.uncertain import SampleKey, find_uncertain, path_text
from simulator.uncertainty.intervals import ALL_APPS

#: Most samples one ``socsim run --samples`` may ask for (each is a whole run).
MAX_SAMPLES = 100_000


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
    allow_plugins: tuple[str, ...]
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
            allow_plugins=self.allow_plugins,
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
    from simulator.plugins import python_registered_modules

    fields = tuple(uncertain_fields(scenario))
    source = scenario.source_file or "<scenario>"
    # the nominal load allowed the scenario's plug-ins: its samples (in workers too) may
    # import them, as a sweep's points may (simulator.sweep.runner)
    plugins = tuple(dict.fromkeys((*scenario.plugins, *python_registered_modules())))
    base_dir = str(Path(source).parent) if scenario.source_file else "."
    return [
        SampleTask(
            scenario.document,
            base_dir,
            source,
            tuple(str(d) for d in allow_dirs),
            plugins,
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
    progress: Callable[[int, int], None] | None = None,
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
    progress : callable, optional
        Called with (samples done, samples) as batches arrive.

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
    rows: list[dict[str, Any]] = []
    for batch in entry.function(run_sample_batch, batches, **options):
        rows.extend(batch)
        if progress is not None:
            progress(len({row["sample"] for row in rows}), len(tasks))
    table = pd.DataFrame(rows)
    order = {app: i for i, app in enumerate(dict.fromkeys(table["app"]))}
    table = table.sort_values(
        ["sample", "app"], key=lambda c: c.map(order) if c.name == "app" else c, kind="stable"
    )
    return table.reset_index(drop=True)


def stderr_progress() -> Callable[[int, int], None]:
    """A ``run_samples(progress=...)`` hook: a stderr line each time another tenth of the
    samples is done."""
    shown = [-1]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // total
        if tenth > shown[0]:
            shown[0] = tenth
            print(f"socsim run: {done} of {total} samples done", file=sys.stderr, flush=True)

    return report


def sample_tables(
    scenario: Scenario,
    nominal: Any,
    samples: int,
    executor: str = "processes",
    workers: int | None = None,
    allow_dirs: Sequence[str | Path] = (),
    progress: bool = True,
) -> dict[str, pd.DataFrame]:
    """``{"samples": ..., "intervals": ...}`` of ``socsim run --samples``: the samples of
    ``scenario`` at the nominal run's replicate, their intervals around ``nominal`` (the
    nominal :class:`~simulator.results.RunResult`), progress on stderr unless ``progress``
    is False (``-q``)."""
    from simulator.engine import simulate

    table = run_samples(
        scenario,
        samples,
        nominal.summary["replicate"],
        executor,
        workers,
        allow_dirs,
        progress=stderr_progress() if progress else None,
    )
    if nominal.trace == "none":  # the per-app figures need its requests table
        nominal = simulate(scenario, replicate=nominal.summary["replicate"], trace="summary")
    from simulator.uncertainty.intervals import intervals

    return {"samples": table, "intervals": intervals(table, result_rows(nominal, -1))}


__all__ = [
    "ALL_APPS",
    "MAX_SAMPLES",
    "SampleTask",
    "check_samples",
    "result_rows",
    "run_sample",
    "run_sample_batch",
    "run_samples",
    "sample_tables",
    "sample_tasks",
    "stderr_progress",
    "uncertain_fields",
]
