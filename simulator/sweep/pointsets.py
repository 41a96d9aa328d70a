"""Sweep designs and the lazy sequences of points they make: pure, no I/O, no simulation.

Designs are a registry (:data:`DESIGNS`; plug-ins add to it): ``grid`` (every
combination, the first parameter varying slowest), ``zip`` (the i-th values together),
``random`` and ``lhs`` (``samples`` draws; Latin hypercube from ``scipy.stats.qmc``).
A design returns a sequence of value tuples that is indexed, not built: a point is made
when it is needed, so a 1,000,000-point grid costs its value lists, not a million tuples.
Everything random is drawn from the scenario seed (:func:`point_set`, :func:`point_seed`),
so the same spec and seed give the same points. The spec itself is
:mod:`simulator.sweep.design`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from simulator.errors import SocsimError
from simulator.registry import Registry
from simulator.schema import Record

if TYPE_CHECKING:  # numpy is imported where it runs: `socsim sweep --help` needs no numpy
    import numpy as np

    from simulator.sweep.design import Parameter, SweepSpec

#: spawn-key prefixes under the scenario seed: per-point seeds and the design's draws
_POINT_STREAM, _DESIGN_STREAM = 0, 1
#: The column of a point's Monte Carlo sample (``mc_samples``, docs/uncertainty.md).
MC_COLUMN = "mc_sample"

#: a design: (parameters, sample count or None, rng) -> the points' value tuples
Design = Callable[[Sequence["Parameter"], int | None, "np.random.Generator"], Sequence[tuple]]
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
