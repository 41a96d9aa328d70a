"""Run a sweep: load, expand, resolve every point, then execute what is not done yet."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.errors import Problem, ScenarioError, SocsimError
from simulator.schema import INVALID, Context, Loc
from simulator.spec.loader import parse_scenario
from simulator.spec.sweepdefs import SWEEP
from simulator.spec.yamlio import load_yaml_file, plain
from simulator.sweep.design import SweepSpec, expand, point_seed, sweep_spec
from simulator.sweep.execute import Task, columns, run_batch, run_task
from simulator.sweep.executors import EXECUTORS, default_workers
from simulator.sweep.points import resolve_points
from simulator.sweep.progress import Progress
from simulator.sweep.store import SweepStore, fingerprint

_OVERRIDES = (
    "design",
    "samples",
    "replicates",
    "fast",
    "executor",
    "workers",
    "scheduler",
    "executor_options",
)


@dataclass(frozen=True)
class PreparedSweep:
    """A sweep expanded and resolved, ready to run (nothing has run yet).

    Attributes
    ----------
    spec : SweepSpec
    points : list of dict
        ``{path: value}`` per point.
    seeds : list of int
        Per point, spawned from the scenario seed.
    tasks : list of Task
        Point-major, replicate-minor.
    meta : dict
        What ``sweep.json`` records.
    """

    spec: SweepSpec
    points: list[dict[str, Any]]
    seeds: list[int]
    tasks: list[Task]
    meta: dict[str, Any]

    @property
    def columns(self) -> list[str]:
        return columns(self.spec.paths)


def sweep_section(
    document: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """The document's ``sweep:`` section with command-line values laid over it.

    ``parameters`` add to (or replace) the section's; ``overrides`` (``design``,
    ``samples``, ``replicates``, ``fast``, ``executor``, ``workers``, ``scheduler``) replace
    its keys when not None, ``executor_options`` (a mapping) adds to the executor's. A
    different executor drops the section's executor options.
    """
    unknown = set(overrides) - set(_OVERRIDES)
    if unknown:
        names = ", ".join(sorted(unknown))
        raise SocsimError(f"unknown sweep override(s) {names}; valid: {', '.join(_OVERRIDES)}")
    section = dict(document.get("sweep") or {})
    if parameters:
        section["parameters"] = {**(section.get("parameters") or {}), **parameters}
    for key in ("design", "samples", "replicates", "fast"):
        if overrides.get(key) is not None:
            section[key] = overrides[key]
    executor = dict(section.get("executor") or {"name": "processes"})
    if overrides.get("executor") not in (None, executor.get("name", "processes")):
        executor = {"name": overrides["executor"]}
    for key in ("workers", "scheduler"):
        if overrides.get(key) is not None:
            executor[key] = overrides[key]
    executor.update(overrides.get("executor_options") or {})
    section["executor"] = executor
    return section


def prepare_sweep(
    path: str | Path,
    parameters: Mapping[str, Any] | None = None,
    allow_dirs: Sequence[str | Path] = (),
    **overrides: Any,
) -> PreparedSweep:
    """Load the scenario in ``path``, expand its sweep and resolve every point.

    Parameters
    ----------
    path : str or Path
        A scenario YAML file, with or without a ``sweep:`` section.
    parameters : mapping, optional
        Extra swept paths, as in the section (``{"links.up.latency_ms": [5, 50]}``).
    allow_dirs : sequence of str or Path
        More directories the scenario's files may lie in (:mod:`simulator.spec.paths`).
    **overrides
        See :func:`sweep_section`.

    Raises
    ------
    ScenarioError
        For a bad scenario, sweep section, path or value (before anything runs).
    """
    path = Path(path)
    source = str(path)
    document = load_yaml_file(path)
    base = parse_scenario(document, base_dir=path.parent, source=source, allow_dirs=allow_dirs)
    section = sweep_section(document, parameters, **overrides)
    if not section.get("parameters"):
        raise ScenarioError(
            [Problem("sweep", "nothing to sweep: add a 'sweep:' section or --set PATH=...", source)]
        )
    ctx = Context(default_file=source)
    checked = SWEEP.check(section, Loc("sweep"), ctx)
    if checked is INVALID or ctx.problems:
        raise ScenarioError(ctx.problems)
    spec = sweep_spec(checked, file=source)
    points = expand(spec, base.seed)
    seeds = [point_seed(base.seed, i) for i in range(len(points))]
    scenarios = resolve_points(document, points, seeds, path.parent, source, allow_dirs)
    tasks = [
        Task(i, r, points[i], scenarios[i], spec.fast)
        for i in range(len(points))
        for r in range(spec.replicates)
    ]
    meta = {
        "scenario": base.name,
        "source": source,
        "sweep": plain(section),
        "parameters": list(spec.paths),
        "design": spec.design,
        "points": len(points),
        "replicates": spec.replicates,
        "rows": len(tasks),
        "columns": columns(spec.paths),
        "fingerprint": fingerprint(points, seeds, spec.replicates),
        "point_values": [
            {"point": i, "seed": s, **values}
            for i, (values, s) in enumerate(zip(points, seeds, strict=True))
        ],
    }
    return PreparedSweep(spec, points, seeds, tasks, meta)


def run_prepared(
    prepared: PreparedSweep,
    out_dir: str | Path,
    quiet: bool = False,
    run: Callable[[Task], dict[str, Any]] = run_task,
    batch_size: int | None = None,
) -> pd.DataFrame:
    """Run the tasks not yet in ``out_dir`` and return the whole table.

    Rows are journaled as each batch arrives; an interrupt (``KeyboardInterrupt``)
    propagates after everything finished so far is saved, and a rerun resumes.
    ``run`` must be a picklable top-level function for the process and Dask executors.
    """
    spec = prepared.spec
    store = SweepStore(out_dir)
    done = store.begin(prepared.meta)
    pending = [t for t in prepared.tasks if (t.point, t.replicate) not in done]
    entry = EXECUTORS.get(spec.executor)
    options = dict(spec.executor_options)
    if batch_size is None and spec.executor == "serial":
        batch_size = 1  # nothing to ship: journal every run
    elif batch_size is None:
        # four batches per worker: progress and resume granularity vs shipping overhead
        workers = options.get("workers") or default_workers()
        batch_size = max(1, math.ceil(len(pending) / (4 * workers)))
    batches = [pending[i : i + batch_size] for i in range(0, len(pending), batch_size)]
    progress = Progress(len(prepared.tasks), len(done), enabled=False if quiet else None)
    work = functools.partial(run_batch, run=run)
    try:
        if batches:  # a finished sweep starts no workers (nor a Dask cluster)
            for rows in entry.function(work, batches, **options):
                store.append(rows)
                progress.update(len(rows))
    finally:
        progress.close()
    return store.finish(prepared.columns)


def run_sweep(
    path: str | Path,
    out_dir: str | Path,
    parameters: Mapping[str, Any] | None = None,
    quiet: bool = False,
    run: Callable[[Task], dict[str, Any]] = run_task,
    batch_size: int | None = None,
    **overrides: Any,
) -> pd.DataFrame:
    """Run (or resume) the sweep of the scenario in ``path``; write and return its table.

    Parameters
    ----------
    path : str or Path
        Scenario YAML file.
    out_dir : str or Path
        The sweep directory (``sweep.json``, ``rows.jsonl``, ``sweep.csv``/``.parquet``).
    parameters : mapping, optional
        Swept paths added to the ``sweep:`` section's.
    quiet : bool
        No progress bar (it is also off when stderr is not a terminal).
    run : callable
        Runs one task into a row (tests substitute it).
    batch_size : int, optional
        Tasks per unit of work (default: four batches per worker).
    **overrides
        ``design``, ``samples``, ``replicates``, ``fast``, ``executor``, ``workers``,
        ``scheduler``, ``executor_options`` (see :func:`sweep_section`).

    Returns
    -------
    DataFrame
        The tidy table (see :func:`simulator.sweep.load_sweep_table`).
    """
    prepared = prepare_sweep(path, parameters, **overrides)
    return run_prepared(prepared, out_dir, quiet=quiet, run=run, batch_size=batch_size)
