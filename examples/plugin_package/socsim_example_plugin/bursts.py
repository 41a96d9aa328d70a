"""An arrival process registered from Python when this module is imported.

A scenario lists the module under ``plugins:`` so that the loader, and every sweep
worker, imports it before checking the names the scenario uses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from simulator.plugins import register_arrival
from simulator.schema import Field, Number, Record


@register_arrival(
    "burst",
    options=Record(
        {
            "size": Field(Number(integer=True, ge=1, le=1000), doc="requests per burst"),
            "period_ms": Field(Number("ms", 1e-3, gt=0), to="period_s", doc="between bursts"),
        },
        name="burst arrival",
    ),
)
def burst(options: Mapping[str, Any], rng: Any) -> Iterator[float]:
    """``size`` requests at once every ``period_ms``, the first burst at t = 0."""
    k = 0
    while True:
        for _ in range(options["size"]):
            yield k * options["period_s"]
        k += 1
