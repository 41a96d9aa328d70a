"""Run a sweep: load, expand, validate the swept values, then run what is not done yet,
making each point's scenario where it runs."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.errors import Problem, ScenarioError, SocsimError
from simulator.plugins import python_registered_modules
from simulator.schema import INVALID, Context, Loc
from simulator.spec.loader import parse_scenario
from simulator.spec.sweepdefs import SWEEP
from simulator.spec.uncertain import uncertain_paths
from simulator.spec.yamlio import load_yaml_file, plain
from simulator.sweep.design import SweepSpec, sweep_spec
from simulator.sweep.execute import Task, columns, run_batch, run_task
from simulator.sweep.executors import EXECUTORS, default_workers
from simulator.sweep.fingerprint import fingerprint, fingerprint_parts
from simulator.sweep.points import PointResolver, _key, check_values, expanded_document
from simulator.sweep.pointsets import (
    RepeatedSeeds,
    SampledPoints,
    SeedList,
    _Indexed,
    point_set,
)
from simulator.sweep.progress import open_progress
from simulator.sweep.store import SweepStore

_OVERRIDES = (
    "design",
    "samples",
    "replicates",
    "fast",
    "executor",
    "workers",
    "scheduler",
    "executor_options",
    "mc_samples",
)
_NOTHING_TO_SAMPLE = (
    "Monte Carlo samples draw the distributions of the scenario and its presets, and "
    "there is none; give a figure as {mean: m, sd: s} or {low: a, high: b} "
    "(docs/uncertainty.md lists the fields)"
)
#: Most runs in one batch: what a kill can lose per worker, and what a worker holds.
MAX_BATCH_RUNS = 256


class TaskList(_Indexed):
    """The tasks of a sweep, point-major and replicate-minor, each made when indexed."""

    def __init__(self, points, seeds, replicates: int, resolver: PointResolver, fast: bool):
        self.points, self.seeds, self.replicates = points, seeds, replicates
        self.resolver, self.fast = resolver, fast
        self._length = len(points) * replicates

    def _item(self, index: int) -> Task:
        point, replicate = divmod(index, self.replicates)
        return Task(
            point, replicate, self.points[point], self.seeds[point], self.resolver, self.fast
        )


@dataclass(frozen=True)
class PreparedSweep:
    """A sweep expanded and validated, ready to run (nothing has run, no point is made).

    Attributes
    ----------
    spec : SweepSpec
    points : sequence of dict
        ``{path: value}`` per point, made when indexed (:class:`PointSet`).
    seeds : sequence of int
        Per point, spawned from the scenario seed (made when indexed).
    resolver : PointResolver
        Makes a point's scenario (in the worker that runs it).
    meta : dict
        What ``sweep.json`` records (but ``point_values``, written from ``points``).
    """

    spec: SweepSpec
    points: Sequence[dict[str, Any]]
    seeds: Sequence[int]
    resolver: PointResolver
    meta: dict[str, Any]

    @property
    def columns(self) -> list[str]:
        return columns(self.spec.columns)

    @property
    def tasks(self) -> TaskList:
        """Point-major, replicate-minor; each task made when indexed."""
        spec = self.spec
        return TaskList(self.points, self.seeds, spec.replicates, self.resolver, spec.fast)

    def point_values(self) -> Iterator[dict[str, Any]]:
        """``{point, seed, **values}`` of every point, one at a time."""
        for index, values in enumerate(self.points):
            yield {"point": index, "seed": self.seeds[index], **values}


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
    for key in ("design", "samples", "replicates", "fast", "mc_samples"):
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
    allow_plugins: Sequence[str] = (),
    **overrides: Any,
) -> PreparedSweep:
    """Load the scenario in ``path``, expand its sweep and validate its swept values
    (:func:`~simulator.sweep.points.check_values`); no point is made yet.

    Parameters
    ----------
    path : str or Path
        A scenario YAML file, with or without a ``sweep:`` section.
    parameters : mapping, optional
        Extra swept paths, as in the section (``{"links.up.latency_ms": [5, 50]}``).
    allow_dirs : sequence of str or Path
        More directories the scenario's files may lie in (:mod:`simulator.spec.paths`).
    allow_plugins : sequence of str
        Modules the scenario's ``plugins:`` may import besides installed socsim plug-ins
        (:func:`simulator.plugins.plugin_allowed`). The workers of every executor get
        them, with the modules this process allowed by itself (its ``plugins:`` and the
        modules of its ``register_*`` calls).
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
    base = parse_scenario(
        document,
        base_dir=path.parent,
        source=source,
        allow_dirs=allow_dirs,
        allow_plugins=allow_plugins,
    )
    # a spawned or Dask worker has not imported this process's plug-in modules: it gets
    # the decisions made here (the modules are the same, their code already trusted)
    allow_plugins = tuple(
        dict.fromkeys((*allow_plugins, *base.plugins, *python_registered_modules()))
    )
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
    points: Sequence[dict[str, Any]] = point_set(spec, base.seed)
    seeds: Sequence[int] = SeedList(base.seed, len(points))
    if spec.mc_samples:
        if not uncertain_paths(base.document):
            raise ScenarioError([Problem("sweep.mc_samples", _NOTHING_TO_SAMPLE, source)])
        points = SampledPoints(points, spec.mc_samples)
        seeds = RepeatedSeeds(seeds, spec.mc_samples)
    expanded = expanded_document(document, path.parent, source, allow_dirs)
    resolver = PointResolver(expanded, path.parent, source, allow_dirs, allow_plugins)
    check_values(resolver, spec, functools.partial(_first_use, spec))
    parts = fingerprint_parts(expanded, spec, path.parent, allow_dirs)
    meta = {
        "scenario": base.name,
        "source": source,
        "sweep": plain(section),
        "parameters": list(spec.paths),
        "design": spec.design,
        "points": len(points),
        "replicates": spec.replicates,
        "rows": len(points) * spec.replicates,
        "columns": columns(spec.columns),
        **({"mc_samples": spec.mc_samples} if spec.mc_samples else {}),
        "fingerprint": fingerprint(parts),
        "fingerprint_parts": parts,
    }
    return PreparedSweep(spec, points, seeds, resolver, meta)


def _first_use(spec: SweepSpec, path: str, value: Any) -> str:
    """`` (point i)``: the first point with ``value`` at ``path`` (grid and zip)."""
    if spec.design not in ("grid", "zip"):
        return ""
    index = spec.paths.index(path)
    values = spec.parameters[index].listed
    position = next(i for i, v in enumerate(values) if _key(v) == _key(value))
    if spec.design == "grid":
        position *= math.prod([len(p.listed) for p in spec.parameters[index + 1 :]])
    return f" (point {position})"


class Batches:
    """The pending tasks in batches, made one batch at a time (``len`` is known).

    With ``resolve_here`` each task carries its scenario, made in this process (for
    remote workers, which may not see the scenario's files).
    """

    def __init__(
        self, tasks: Sequence[Task], done: frozenset, size: int, resolve_here: bool = False
    ):
        self.tasks, self.done, self.size = tasks, done, size
        self.pending = len(tasks) - len(done)
        self.resolve_here = resolve_here

    def __len__(self) -> int:
        return math.ceil(self.pending / self.size)

    def __iter__(self) -> Iterator[list[Task]]:
        batch: list[Task] = []
        replicates = self.tasks.replicates if isinstance(self.tasks, TaskList) else 1
        for index in range(len(self.tasks)):
            if divmod(index, replicates) in self.done:
                continue
            task = self.tasks[index]
            if self.resolve_here:
                task = _resolved_here(task)
            batch.append(task)
            if len(batch) == self.size:
                yield batch
                batch = []
        if batch:
            yield batch


def _resolved_here(task: Task) -> Task:
    """``task`` with its scenario made now (or unchanged: its run then records the error)."""
    try:
        return replace(task, scenario=task.resolve(), resolver=None)
    except ScenarioError:
        return task


def run_prepared(
    prepared: PreparedSweep,
    out_dir: str | Path,
    quiet: bool = False,
    run: Callable[[Task], dict[str, Any]] = run_task,
    batch_size: int | None = None,
    restart: bool = False,
    repair: bool = False,
    notify: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Run the tasks not yet in ``out_dir`` and return the whole table.

    Rows are journaled as each batch arrives; an interrupt (``KeyboardInterrupt``)
    propagates after everything finished so far is saved, and a rerun resumes.
    ``run`` must be a picklable top-level function for the process and Dask executors.
    ``restart`` discards the rows of whatever sweep the folder holds; ``repair`` drops
    bad journal lines and runs their points again; ``notify`` receives notes for the user
    (a torn line dropped, lines repaired).

    Raises
    ------
    SweepFolderError
        When the folder holds another sweep or damaged files, or is in use
        (:mod:`simulator.sweep.store`); nothing has run.
    """
    spec = prepared.spec
    store = SweepStore(out_dir)
    try:
        begun = store.begin(prepared.meta, prepared.point_values(), restart=restart, repair=repair)
        for note in begun.notes:
            if notify is not None:
                notify(note)
        tasks = prepared.tasks
        pending = len(tasks) - len(begun.done)
        entry = EXECUTORS.get(spec.executor)
        options = dict(spec.executor_options)
        if batch_size is None and spec.executor == "serial":
            batch_size = 1  # nothing to ship: journal every run
        elif batch_size is None:
            # four batches per worker: progress and resume granularity vs shipping overhead
            workers = options.get("workers") or default_workers()
            batch_size = min(max(1, math.ceil(pending / (4 * workers))), MAX_BATCH_RUNS)
        # a remote Dask cluster may not see the scenario's files: points travel resolved
        remote = spec.executor == "dask" and options.get("scheduler") is not None
        batches = Batches(tasks, begun.done, batch_size, resolve_here=remote)
        progress = open_progress(len(tasks), len(begun.done), quiet)
        work = functools.partial(run_batch, run=run)
        try:
            if pending:  # a finished sweep starts no workers (nor a Dask cluster)
                for rows in entry.function(work, batches, **options):
                    store.append(rows)
                    progress.update(len(rows))
        finally:
            progress.close()
        return store.finish(prepared.columns)
    finally:
        store.close()


def run_sweep(
    path: str | Path,
    out_dir: str | Path,
    parameters: Mapping[str, Any] | None = None,
    quiet: bool = False,
    run: Callable[[Task], dict[str, Any]] = run_task,
    batch_size: int | None = None,
    restart: bool = False,
    repair: bool = False,
    notify: Callable[[str], None] | None = None,
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
        No progress bar. Otherwise ``tqdm.auto`` draws one when installed (a widget in a
        notebook), else a text bar on a terminal (:func:`~simulator.sweep.progress.open_progress`).
    run : callable
        Runs one task into a row (tests substitute it).
    batch_size : int, optional
        Tasks per unit of work (default: four batches per worker, at most
        :data:`MAX_BATCH_RUNS`).
    restart, repair, notify
        See :func:`run_prepared`.
    **overrides
        ``design``, ``samples``, ``replicates``, ``fast``, ``executor``, ``workers``,
        ``scheduler``, ``executor_options`` (see :func:`sweep_section`), ``allow_dirs``
        and ``allow_plugins`` (see :func:`prepare_sweep`).

    Returns
    -------
    DataFrame
        The tidy table (see :func:`simulator.sweep.load_sweep_table`).
    """
    prepared = prepare_sweep(path, parameters, **overrides)
    return run_prepared(
        prepared,
        out_dir,
        quiet=quiet,
        run=run,
        batch_size=batch_size,
        restart=restart,
        repair=repair,
        notify=notify,
    )
