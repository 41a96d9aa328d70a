"""The ``sweep:`` section of a scenario as schema data.

``socsim run`` validates and ignores it; ``socsim sweep`` (:mod:`simulator.sweep`) reads it.
Kept apart from :mod:`simulator.spec.definitions` because it is a section about runs, not
about the modelled system.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.schema import (
    INVALID,
    Boolean,
    Context,
    Field,
    Loc,
    MapOf,
    Number,
    Record,
    Schema,
    Tagged,
    Text,
)

#: A scenario path: dotted keys with list indices, e.g. ``workload[0].arrival.rate_hz``.
PATH_PATTERN = r"[A-Za-z_][A-Za-z0-9_\-]*(\[\d+\])*(\.[A-Za-z_][A-Za-z0-9_\-]*(\[\d+\])*)*"
_PATH_HINT = "dotted keys with [i] list indices, e.g. workload[0].arrival.rate_hz"

RANGE = Record(
    {
        "start": Field(Number(), doc="first value (inclusive)"),
        "stop": Field(Number(), doc="last value (inclusive when a step lands on it)"),
        "step": Field(Number(gt=0), default=None, doc="spacing of an arithmetic range"),
        "num": Field(
            Number(integer=True, ge=1), default=None, doc="number of evenly spaced values"
        ),
        "log": Field(Boolean(), default=False, doc="with num: geometric spacing"),
    },
    name="range",
)


class SweepValues(Schema):
    """The values of one swept parameter: a list, or a range mapping.

    A range without ``step`` or ``num`` is continuous and only random and Latin-hypercube
    designs can sample it.
    """

    def describe(self) -> str:
        return "a list of values, or a range {start, stop, step or num, log}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if isinstance(value, list):
            if not value:
                return ctx.problem(loc, "expected at least one value, got an empty list")
            return {"values": list(value)}
        if not isinstance(value, Mapping):
            return ctx.problem(loc, f"expected {self.describe()}, got {value!r}")
        out = RANGE.check(value, loc, ctx)
        if out is INVALID:
            return INVALID
        if out["step"] is not None and out["num"] is not None:
            return ctx.problem(loc, "give step or num, not both")
        if out["log"] and out["step"] is not None:
            return ctx.problem(loc, "log spacing takes num, not step")
        if out["log"] and min(out["start"], out["stop"]) <= 0:
            return ctx.problem(loc, "log spacing needs start and stop > 0")
        if out["step"] is not None and out["stop"] < out["start"]:
            return ctx.problem(loc, f"stop {out['stop']:g} is below start {out['start']:g}")
        # whole numbers written as such stay whole (a swept `count` must stay an int)
        whole = all(
            isinstance(value.get(k), int) and not isinstance(value.get(k), bool)
            for k in ("start", "stop", "step")
            if value.get(k) is not None
        )
        return {"range": {**out, "integer": whole and not out["log"] and out["num"] is None}}


def _executor_schemas() -> Mapping[str, Record]:
    # imported when a document is checked: the sweep package imports the spec loader
    from simulator.sweep.executors import EXECUTORS

    return EXECUTORS.schemas()


def _design_names() -> tuple[str, ...]:
    from simulator.sweep.design import DESIGNS

    return DESIGNS.names()


SWEEP = Record(
    {
        "parameters": Field(
            MapOf(SweepValues(), min_len=1, key_pattern=PATH_PATTERN, key_hint=_PATH_HINT),
            doc="scenario path -> values, e.g. `links.uplink.bandwidth_mbps: [1, 5.85, 18.88]`",
        ),
        "design": Field(
            Text(choices=_design_names, what="sweep design"),
            default="grid",
            doc="grid: every combination; zip: i-th values together; random, lhs: `samples` draws",
        ),
        "samples": Field(
            Number(integer=True, ge=1), default=None, doc="points drawn by random and lhs"
        ),
        "replicates": Field(
            Number(integer=True, ge=1), default=1, doc="runs per point, seeds spawned per point"
        ),
        "mc_samples": Field(
            Number(integer=True, ge=1),
            default=None,
            doc="Monte Carlo samples of the scenario's distributions per point, a column "
            "`mc_sample` (docs/uncertainty.md)",
        ),
        "executor": Field(
            Tagged("name", _executor_schemas, what="sweep executor", default="processes"),
            default={"name": "processes"},
            doc="serial, processes or dask, with their options",
        ),
        "fast": Field(
            Boolean(),
            default=False,
            doc="lone-request points use the analytic estimate instead of the engine",
        ),
    },
    name="sweep section",
)
