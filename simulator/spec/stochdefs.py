"""Schema of a unit's stochastic execution time and background load (docs/stochastic.md).

``variation`` maps op kinds (and ``default``) to a distribution of mean 1 that multiplies
each op's time; ``background`` is a utilisation the unit gives to work outside the
scenario (processor sharing). The loader turns them into
:class:`~simulator.hardware.variation.TimeVariation` and
:class:`~simulator.hardware.variation.BackgroundLoad`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.graph.model import OP_KINDS
from simulator.hardware.variation import MAX_UTILISATION, BackgroundLoad, TimeVariation
from simulator.limits import MAX_HORIZON_S
from simulator.schema import Field, ListOf, MapOf, Number, Record, Tagged
from simulator.spec.linkdefs import TracePoint

#: Largest coefficient of variation accepted: a factor whose sd is ten times its mean.
MAX_TIME_CV = 10.0
#: Most points of a background utilisation trace.
MAX_LOAD_POINTS = 1_000_000

_CV = Field(Number(ge=0, le=MAX_TIME_CV), doc="sd / mean of the factor (mean 1)")
DISTRIBUTION_RECORDS = {
    "lognormal": Record({"cv": _CV}, name="lognormal variation"),
    "gamma": Record({"cv": _CV}, name="gamma variation"),
    "exponential": Record({}, name="exponential variation (cv 1)"),
    "deterministic": Record({}, name="deterministic (no variation)"),
}
TIME_VARIATION = Tagged(
    "distribution", lambda: DISTRIBUTION_RECORDS, what="execution-time distribution"
)
VARIATION = MapOf(TIME_VARIATION, keys=(*OP_KINDS, "default"))
VARIATION_DOC = (
    "per op kind ('default': the rest), a factor of mean 1 on each op's time, drawn at its "
    "start: {distribution: lognormal|gamma, cv: 0.2} or {distribution: exponential} "
    "(docs/stochastic.md)"
)


class LoadPoint(TracePoint):
    """``[time_s, utilisation]`` of a background load trace."""

    _PARTS = (Number("s", ge=0, le=MAX_HORIZON_S), Number(ge=0, le=MAX_UTILISATION))

    def describe(self) -> str:
        return "[time_s, utilisation]"


BACKGROUND = Record(
    {
        "utilisation": Field(
            Number(ge=0, le=MAX_UTILISATION), doc="constant share of the unit taken from t = 0"
        ),
        "trace": Field(
            ListOf(LoadPoint(), min_len=1, max_len=MAX_LOAD_POINTS),
            doc="[[time_s, utilisation], ...], ascending times; 0 before the first",
        ),
    },
    exclusive=(("utilisation", "trace"),),
    name="background load",
)
BACKGROUND_DOC = (
    "work outside the scenario sharing the unit: an op runs at (1 - utilisation) of its "
    "speed (docs/stochastic.md)"
)


def unit_fields(unit: Mapping[str, Any]) -> dict[str, Any]:
    """``variation`` and ``background`` of a checked unit as ComputeUnit fields.

    Raises
    ------
    SocsimError
        When a background trace's times do not increase.
    """
    variation = {
        kind: TimeVariation(spec["distribution"], spec.get("cv", 0.0))
        for kind, spec in unit["variation"].items()
    }
    spec = unit["background"]
    background = None
    if spec is not None:
        if spec.get("trace") is not None:
            background = BackgroundLoad(tuple(spec["trace"]))
        else:
            background = BackgroundLoad.constant(spec["utilisation"])
    return {"variation": variation, "background": background}
