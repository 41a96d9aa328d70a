"""The ``score:`` section of a scenario as schema data (read by ``socsim score``).

``socsim run`` validates and ignores it; :mod:`simulator.score` runs every combination
of deployment techniques under every placement and reports the five indicators
(docs/techniques.md).
"""

from __future__ import annotations

from simulator.placement.base import POLICIES
from simulator.schema import Field, ListOf, MapOf, Record, Tagged, Text


def _technique() -> Tagged:
    from simulator.graph.techniques import TECHNIQUE  # lazy: loads the technique modules

    return TECHNIQUE


COMBINATION = Record(
    {
        "model": Field(
            Text(), default=None, doc="a key of 'models' (default: the scored app's model)"
        ),
        "techniques": Field(
            ListOf(Tagged("name", lambda: _technique().variants(), what="technique")),
            default=[],
            doc="applied in order on top of the model's own techniques",
        ),
    },
    name="score combination",
)

SCORE = Record(
    {
        "app": Field(Text(), default=None, doc="the workload app scored (default: the first)"),
        "combinations": Field(
            MapOf(COMBINATION, min_len=1), doc="name -> model and technique list"
        ),
        "placements": Field(
            MapOf(Tagged("policy", POLICIES.schemas, what="placement policy"), min_len=1),
            doc="name -> placement (as 'placement:')",
        ),
    },
    name="score section",
)
