"""Sweep specs and their expansion into points: pure functions, no I/O, no simulation.

A point is a mapping ``scenario path -> value``. Designs are a registry: ``grid`` (every
combination, the first parameter varying slowest), ``zip`` (the i-th values together),
``random`` and ``lhs`` (``samples`` draws; Latin hypercube from ``scipy.stats.qmc``).
Everything random is drawn from the scenario seed, so the same spec and seed give the
same points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.errors import Problem, ScenarioError, SocsimError
from simulator.registry import Registry
from simulator.schema import Record

if TYPE_CHECKING:  # numpy is imported where it runs: `socsim sweep --help` needs no numpy
    import numpy as np

#: spawn-key prefixes under the scenario seed: per-point seeds and the design's draws
_POINT_STREAM, _DESIGN_STREAM = 0, 1
#: The column of a point's Monte Carlo sample (``mc_samples``, docs/uncertainty.md).
MC_COLUMN = "mc_sample"


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
        problems.append(Problem(f"{where}.samples", f"design '{design}' needs samples", file))
    if not sampled and checked["samples"] is not None:
        problems.append(
            Problem(
                f"{where}.samples", f"design '{design}' takes no samples (random, lhs do)", file
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


# -- designs ------------------------------------------------------------------------------
# A design returns a sequence of value tuples that is indexed, not built: a point is made
# when it is needed, so a 1,000,000-point grid costs its value lists, not a million tuples.
Design = Callable[[Sequence[Parameter], int | None, "np.random.Generator"], Sequence[tuple]]
DESIGNS: Registry[Design] = Registry("sweep design", "socsim.designs")
_NO_OPTIONS = Record({}, name="design options")


class _Indexed(Sequence):
    """A read-only sequence whose items are computed from their index (``_item``)."""

    _length: int  # set by each subclass's __init__

    def __len__(self) -> int:
        return self._length

    def _item(self, index: int) -> Any:
        raise NotImplementedError

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._item(index)


class GridPoints(_Indexed):
    """Every combination of ``value_lists``, the first varying slowest (row-major)."""

    def __init__(self, value_lists: Sequence[Sequence[Any]]):
        self.value_lists = [tuple(v) for v in value_lists]
        self._length = math.prod(len(v) for v in self.value_lists)

    def _item(self, index: int) -> tuple:
        out = []
        for values in reversed(self.value_lists):  # mixed radix, last digit fastest
            index, digit = divmod(index, len(values))
            out.append(values[digit])
        return tuple(reversed(out))


class ZipPoints(_Indexed):
    """The i-th values of every list together (lists of one length)."""

    def __init__(self, value_lists: Sequence[Sequence[Any]]):
        self.value_lists = [tuple(v) for v in value_lists]
        self._length = min((len(v) for v in self.value_lists), default=0)

    def _item(self, index: int) -> tuple:
        return tuple(values[index] for values in self.value_lists)


class UnitPoints(_Indexed):
    """Points drawn as a ``samples x parameters`` array in [0, 1), mapped when indexed."""

    def __init__(self, params: Sequence[Parameter], units: np.ndarray):
        self.params, self.units = tuple(params), units
        self._length = len(units)

    def _item(self, index: int) -> tuple:
        row = self.units[index]
        return tuple(_from_unit(p, float(u)) for p, u in zip(self.params, row, strict=True))


@DESIGNS.register("grid", _NO_OPTIONS)
def grid(params: Sequence[Parameter], samples: int | None, rng: np.random.Generator):
    """Every combination of the values; the first parameter varies slowest."""
    return GridPoints([p.listed for p in params])


@DESIGNS.register("zip", _NO_OPTIONS)
def zipped(params: Sequence[Parameter], samples: int | None, rng: np.random.Generator):
    """The i-th values of every parameter together (lists of one length)."""
    return ZipPoints([p.listed for p in params])


def _from_unit(p: Parameter, u: float) -> Any:
    """Map ``u`` in [0, 1) onto a parameter: an index into its values, or its range."""
    if p.values is not None:
        return p.values[min(int(u * len(p.values)), len(p.values) - 1)]
    low, high = p.bounds
    if p.log:
        return float(math.exp(math.log(low) + u * (math.log(high) - math.log(low))))
    return float(low + u * (high - low))


@DESIGNS.register("random", _NO_OPTIONS)
def random(params: Sequence[Parameter], samples: int | None, rng: np.random.Generator):
    """``samples`` independent uniform draws (log-uniform for log ranges; lists uniformly)."""
    return UnitPoints(params, rng.random((_count(samples, "random"), len(params))))


@DESIGNS.register("lhs", _NO_OPTIONS)
def latin_hypercube(params: Sequence[Parameter], samples: int | None, rng: np.random.Generator):
    """A Latin hypercube of ``samples`` points: each parameter's range cut into ``samples``
    equal strata, each stratum sampled once (McKay et al. 1979; ``scipy.stats.qmc``)."""
    from scipy.stats import qmc

    count = _count(samples, "lhs")
    return UnitPoints(params, qmc.LatinHypercube(d=len(params), rng=rng).random(count))


def _count(samples: int | None, design: str) -> int:
    """The sample count a sampling design needs (the sweep's check asks for it first)."""
    if samples is None:
        raise SocsimError(f"the {design} design needs sweep.samples")
    return samples


class PointSet(_Indexed):
    """The points of a sweep, each ``{path: value}`` made when indexed (nothing stored
    per point)."""

    def __init__(self, paths: Sequence[str], rows: Sequence[tuple]):
        self.paths, self.rows = tuple(paths), rows
        self._length = len(rows)

    def _item(self, index: int) -> dict[str, Any]:
        return dict(zip(self.paths, self.rows[index], strict=True))


class SampledPoints(_Indexed):
    """Every point of ``points`` ``samples`` times: item ``p x samples + s`` is point
    ``p`` with ``{MC_COLUMN: s}`` (its Monte Carlo sample ``s``)."""

    def __init__(self, points: Sequence[dict[str, Any]], samples: int):
        self.points, self.samples = points, samples
        self._length = len(points) * samples

    def _item(self, index: int) -> dict[str, Any]:
        point, sample = divmod(index, self.samples)
        return {**self.points[point], MC_COLUMN: sample}


class RepeatedSeeds(_Indexed):
    """``seeds`` with each repeated ``samples`` times: the samples of a point share the
    point's seed (they differ only in their parameters)."""

    def __init__(self, seeds: Sequence[int], samples: int):
        self.seeds, self.samples = seeds, samples
        self._length = len(seeds) * samples

    def _item(self, index: int) -> int:
        return self.seeds[index // self.samples]


def point_set(spec: SweepSpec, seed: int) -> PointSet:
    """The points of ``spec`` as a lazy sequence (index -> ``{path: value}``).

    Pure and deterministic: random designs draw from a stream spawned from ``seed``.
    """
    import numpy as np

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_DESIGN_STREAM,)))
    rows = DESIGNS.get(spec.design).function(spec.parameters, spec.samples, rng)
    return PointSet(spec.paths, rows)


def expand(spec: SweepSpec, seed: int) -> list[dict[str, Any]]:
    """The points of ``spec``: one ``{path: value}`` per point, in point order (a list;
    :func:`point_set` makes them one at a time)."""
    return list(point_set(spec, seed))


def point_seed(seed: int, point: int) -> int:
    """The seed of point ``point``, spawned from the scenario ``seed`` (numpy SeedSequence).

    Its replicates differ by replicate index, as in ``socsim run --replicate``.
    """
    import numpy as np

    state = np.random.SeedSequence(seed, spawn_key=(_POINT_STREAM, point)).generate_state(1)
    return int(state[0])


class SeedList(_Indexed):
    """The seeds of ``count`` points (:func:`point_seed`), computed when indexed."""

    def __init__(self, seed: int, count: int):
        self.seed, self._length = seed, count

    def _item(self, index: int) -> int:
        return point_seed(self.seed, index)
