"""Sweep specs: the checked ``sweep:`` section as a :class:`SweepSpec` of
:class:`Parameter` s, and its size checks; pure functions, no I/O, no simulation.

A point is a mapping ``scenario path -> value``. The designs that expand a spec into
points (``grid``, ``zip``, ``random``, ``lhs``: the :data:`DESIGNS` registry) and the
lazy point sequences live in :mod:`simulator.sweep.pointsets`; :data:`DESIGNS`,
:data:`MC_COLUMN`, :func:`expand`, :func:`point_seed` and :func:`point_set` are
re-exported here, where plug-ins and older code import them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from simulator.errors import Problem, ScenarioError
from simulator.sweep.pointsets import DESIGNS as DESIGNS
from simulator.sweep.pointsets import MC_COLUMN as MC_COLUMN
from simulator.sweep.pointsets import expand as expand
from simulator.sweep.pointsets import point_seed as point_seed
from simulator.sweep.pointsets import point_set as point_set


@dataclass(frozen=True)
class Parameter:
    """One swept scenario path: discrete ``values``, or a continuous ``[low, high]``.

    Attributes
    ----------
    path : str
        Where the value goes, e.g. ``links.uplink.bandwidth_mbps``.
    values : tuple or None
        The values in order (lists and ranges with ``step`` or ``num``).
    low, high : float or None
        Bounds of a continuous range (random and lhs designs only).
    log : bool
        Continuous range sampled uniformly in log space.
    """

    path: str
    values: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    log: bool = False

    @property
    def continuous(self) -> bool:
        return self.values is None

    @property
    def listed(self) -> tuple[Any, ...]:
        """The values of a discrete parameter (ValueError for a continuous range)."""
        if self.values is None:
            raise ValueError(f"{self.path}: a continuous range has no list of values")
        return self.values

    @property
    def bounds(self) -> tuple[float, float]:
        """``(low, high)`` of a continuous range (ValueError for a discrete parameter)."""
        if self.low is None or self.high is None:
            raise ValueError(f"{self.path}: a list of values has no continuous bounds")
        return self.low, self.high


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: parameters, design, replicates and how to execute it."""

    parameters: tuple[Parameter, ...]
    design: str = "grid"
    samples: int | None = None
    replicates: int = 1
    executor: str = "processes"
    executor_options: Mapping[str, Any] = field(default_factory=dict)
    fast: bool = False
    mc_samples: int | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.parameters)

    @property
    def columns(self) -> tuple[str, ...]:
        """The point columns of the table: the swept paths, then ``mc_sample`` when the
        sweep draws Monte Carlo samples."""
        return (*self.paths, MC_COLUMN) if self.mc_samples else self.paths


def range_values(
    start: float, stop: float, step: float | None = None, num: int | None = None, log: bool = False
) -> tuple[float, ...]:
    """The values of a range: ``start, start + step, …`` up to ``stop`` (inclusive), or
    ``num`` values from ``start`` to ``stop`` evenly (geometrically with ``log``).

    Steps add as decimals (``0.1`` steps from ``0`` give ``0.3``, not ``0.30000000000000004``).
    """
    if step is not None:
        first, delta = Decimal(repr(start)), Decimal(repr(step))
        count = int((Decimal(repr(stop)) - first) / delta) + 1
        return tuple(float(first + i * delta) for i in range(count))
    if num is None:
        raise ValueError("a discrete range needs step or num")
    if num == 1:
        return (float(start),)
    import numpy as np

    spaced = np.geomspace(start, stop, num) if log else np.linspace(start, stop, num)
    values = [float(v) for v in spaced]
    values[0], values[-1] = float(start), float(stop)  # exact ends, whatever the rounding
    return tuple(values)


def parameter(path: str, checked: Mapping[str, Any]) -> Parameter:
    """A :class:`Parameter` from one validated ``parameters`` entry (see ``SweepValues``)."""
    if "values" in checked:
        return Parameter(path, tuple(checked["values"]))
    spec = checked["range"]
    if spec["step"] is None and spec["num"] is None:
        return Parameter(path, None, spec["start"], spec["stop"], spec["log"])
    values = range_values(spec["start"], spec["stop"], spec["step"], spec["num"], spec["log"])
    if spec["integer"]:
        values = tuple(int(v) for v in values)
    return Parameter(path, values)


#: Most runs (points x replicates) one sweep may have: each run makes and validates its
#: point's scenario (2-5 ms) before it runs, so a million already takes hours; a typo
#: like ``num: 1e9`` must not start a sweep that never ends.
MAX_SWEEP_RUNS = 1_000_000


def _value_count(body: Mapping[str, Any]) -> int:
    """How many values a validated ``parameters`` entry stands for (0: continuous)."""
    if "values" in body:
        return len(body["values"])
    spec = body["range"]
    if spec["num"] is not None:
        return spec["num"]
    if spec["step"] is not None:
        span = Decimal(repr(spec["stop"])) - Decimal(repr(spec["start"]))
        return max(int(span / Decimal(repr(spec["step"]))) + 1, 0)
    return 0


def _check_size(checked: Mapping[str, Any], where: str, file: str | None) -> None:
    """Refuse a sweep of more than MAX_SWEEP_RUNS runs, naming the range that is too big."""
    counts = {path: _value_count(body) for path, body in checked["parameters"].items()}
    for path, count in counts.items():
        if count > MAX_SWEEP_RUNS:
            raise ScenarioError(
                [
                    Problem(
                        f"{where}.parameters.{path}",
                        f"{count:,} values; a sweep runs at most {MAX_SWEEP_RUNS:,} runs",
                        file,
                    )
                ]
            )
    design = checked["design"]
    if design in ("random", "lhs"):
        points = checked["samples"] or 0
    elif design == "zip":
        points = max(counts.values(), default=0)
    else:
        points = math.prod(counts.values())
    runs = points * checked["replicates"] * (checked.get("mc_samples") or 1)
    if runs > MAX_SWEEP_RUNS:
        raise ScenarioError(
            [
                Problem(
                    where,
                    f"{points:,} points x {checked['replicates']:,} replicates = {runs:,} runs; "
                    f"a sweep runs at most {MAX_SWEEP_RUNS:,}",
                    file,
                )
            ]
        )


def sweep_spec(checked: Mapping[str, Any], where: str = "sweep", file: str | None = None):
    """A :class:`SweepSpec` from a validated ``sweep:`` section (the schema's output).

    Raises
    ------
    ScenarioError
        For what the schema cannot see: ``samples`` missing for random/lhs or given for
        grid/zip, zip lists of different lengths, continuous ranges in grid/zip.
    """
    design = checked["design"]
    _check_size(checked, where, file)  # before any value list is built
    params = tuple(parameter(path, body) for path, body in checked["parameters"].items())
    problems = []
    sampled = design in ("random", "lhs")
    if sampled and checked["samples"] is None:
        problems.append(
            Problem(
                f"{where}.samples",
                f"design '{design}' needs samples (here, or --samples N on the command line)",
                file,
            )
        )
    if not sampled and checked["samples"] is not None:
        problems.append(
            Problem(
                f"{where}.samples",
                f"design '{design}' takes no samples (random, lhs do): drop samples "
                "(or --samples), or choose design random or lhs (--design)",
                file,
            )
        )
    for p in params:
        if p.path == "seed":  # a column of its own: two 'seed' columns break the table
            problems.append(
                Problem(
                    f"{where}.parameters.seed",
                    "each point's seed is derived from the scenario's seed; to repeat a point "
                    "with other random draws give 'replicates: N'",
                    file,
                )
            )
        if p.continuous and not sampled:
            problems.append(
                Problem(
                    f"{where}.parameters.{p.path}",
                    f"design '{design}' needs discrete values: give step or num, or a list",
                    file,
                )
            )
    if design == "zip" and len({len(p.values or ()) for p in params}) > 1:
        sizes = ", ".join(f"{p.path}: {len(p.values or ())}" for p in params)
        problems.append(
            Problem(f"{where}.parameters", f"zip needs lists of one length, got {sizes}", file)
        )
    if problems:
        raise ScenarioError(problems)
    executor = dict(checked["executor"])
    return SweepSpec(
        parameters=params,
        design=design,
        samples=checked["samples"],
        replicates=checked["replicates"],
        executor=executor.pop("name"),
        executor_options=executor,
        fast=checked["fast"],
        mc_samples=checked.get("mc_samples"),
    )
