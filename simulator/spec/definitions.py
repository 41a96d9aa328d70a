"""The scenario format as schema data (the single source of truth for keys and units).

YAML keys carry their unit (``latency_ms``, ``bandwidth_mbps``, ``peak_gflops``);
``Field.to`` names the SI value the loader produces (``latency_s``, ``bandwidth_bps``,
``peak_flops``). ``docs/scenario-format.md`` documents the same tables.

The hardware section (nodes, units, DVFS, caches, thermal models) is
:mod:`simulator.spec.nodedefs`; links, models, failures, requests, stochastic
figures, sweeps and scores have their own ``*defs`` modules. This one holds the
workload entry and the top-level records (:data:`SCENARIO`, :data:`LIBRARY`) and
re-exports the hardware names.
"""

from __future__ import annotations

from typing import Any

from simulator.failures import ON_FAILURE
from simulator.limits import MAX_HORIZON_S, MAX_REQUESTS
from simulator.output.names import NAME_RULE, name_problem, suggest_slug
from simulator.placement.base import POLICIES
from simulator.placement.objectives import OBJECTIVES, WEIGHT_KEYS
from simulator.plugins import MODULE_PATTERN
from simulator.scheduling import DISPATCHERS, SCHEDULERS, AdaptiveOptions
from simulator.schema import (
    INVALID,
    AnyValue,
    Boolean,
    Context,
    Field,
    ListOf,
    Loc,
    MapOf,
    Number,
    Record,
    Tagged,
    Text,
)
from simulator.spec.failuredefs import FAILURES
from simulator.spec.linkdefs import LINK_ENTRY, MEMBER_PATTERN
from simulator.spec.modeldefs import ModelChoice
from simulator.spec.nodedefs import CACHE_LEVEL as CACHE_LEVEL
from simulator.spec.nodedefs import CACHES_DOC as CACHES_DOC
from simulator.spec.nodedefs import DVFS as DVFS
from simulator.spec.nodedefs import MAX_MV as MAX_MV
from simulator.spec.nodedefs import MIN_MV as MIN_MV
from simulator.spec.nodedefs import NAME_HINT, NODE
from simulator.spec.nodedefs import SYNC_PAIR as SYNC_PAIR
from simulator.spec.nodedefs import THERMAL as THERMAL
from simulator.spec.nodedefs import UNIT as UNIT
from simulator.spec.nodedefs import WATTS as WATTS
from simulator.spec.requestdefs import (
    ENERGY_WINDOW,
    ENERGY_WINDOW_DOC,
    INPUT,
    INPUT_DOC,
    MAX_BYTES,
    RESPONSE_DOC,
)
from simulator.spec.scoredefs import SCORE
from simulator.spec.sweepdefs import SWEEP
from simulator.workload import ARRIVALS

GIGA, MEGA, MILLI, MICRO = 1e9, 1e6, 1e-3, 1e-6

#: ``presets:`` of a library file or a scenario; bodies are checked where they are used
#: (``validate_library`` checks them all).
PRESETS = Record(
    {
        "nodes": Field(MapOf(AnyValue()), default={}),
        "links": Field(MapOf(AnyValue()), default={}),
    },
    name="presets section",
)

ARRIVAL = Tagged("process", ARRIVALS.schemas, what="arrival process")
PLACEMENT = Tagged("policy", POLICIES.schemas, what="placement policy")

ADAPTIVE = Record(
    {
        "objective": Field(
            Text(choices=OBJECTIVES), default="latency", doc="what the prediction minimises"
        ),
        "weights": Field(
            MapOf(Number(ge=0), keys=WEIGHT_KEYS, min_len=1),
            default={},
            doc="for objective 'weighted': per-second and per-joule weights",
        ),
        "ewma_alpha": Field(
            Number(gt=0, le=1),
            default=AdaptiveOptions.ewma_alpha,
            doc="weight of the newest throughput sample",
        ),
        "stale_ms": Field(
            Number("ms", MILLI, gt=0),
            default=AdaptiveOptions.stale_s / MILLI,
            to="stale_s",
            doc="a link direction without a sample this long is assumed nominal again",
        ),
        "fallback": Field(
            Number(integer=True, ge=0),
            default=None,
            doc="replica index a request given up (a hop timed out, or a handover dropped "
            "its transfer) restarts on; default: the first replica that uses no network "
            "(none: the request is dropped)",
        ),
    },
    name="adaptive options",
)

WORKLOAD = Record(
    {
        "app": Field(Text(pattern=MEMBER_PATTERN)),
        "model": Field(Text()),
        "source": Field(Text()),
        "arrival": Field(ARRIVAL),
        "count": Field(Number(integer=True, ge=1, le=MAX_REQUESTS), default=None),
        "duration_s": Field(Number("s", gt=0, le=MAX_HORIZON_S), default=None),
        "deadline_ms": Field(Number("ms", MILLI, gt=0), default=None, to="deadline_s"),
        "priority": Field(Number(integer=True), default=0),
        "placement": Field(PLACEMENT, default=None),
        "replicas": Field(
            ListOf(PLACEMENT, min_len=1), default=[], doc="placements to balance requests over"
        ),
        "dispatch": Field(
            Text(choices=DISPATCHERS.names, what="dispatcher"),
            default="round_robin",
            doc="which replica gets a request",
        ),
        "adaptive": Field(
            ADAPTIVE, default=None, doc="with dispatch 'adaptive': observation and fallback"
        ),
        "transfer_timeout_ms": Field(
            Number("ms", MILLI, gt=0),
            default=None,
            to="transfer_timeout_s",
            doc="a network hop unfinished this long after it was submitted gives the request "
            "up: it restarts on the fallback (dispatch 'adaptive') or is dropped",
        ),
        "on_failure": Field(
            Text(choices=ON_FAILURE),
            default="retry",
            doc="a request in flight on a unit that fails: retry on a replica that is up "
            "(else wait), wait for its replica to recover, or drop (docs/failures.md)",
        ),
        "input": Field(INPUT, default=None, doc=INPUT_DOC),
        "response_bytes": Field(
            Number("bytes", integer=True, ge=0, le=MAX_BYTES), default=None, doc=RESPONSE_DOC
        ),
    },
    name="workload entry",
)


class RunName(Text):
    """The scenario name: it names the default output folder ``runs/<name>``, so it is
    a safe folder name (:data:`~simulator.output.names.NAME_RULE`), never a path."""

    def describe(self) -> str:
        return "a folder name"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        value = super().check(value, loc, ctx)
        problem = None if value is INVALID else name_problem(value)
        if problem is None:
            return value
        return ctx.problem(
            loc, f"scenario name '{value}' {problem}; a name is {NAME_RULE}", suggest_slug(value)
        )


INCLUDE_DOC = (
    "library files, relative to this file, or preset:NAME for the shipped file that "
    "defines preset NAME (socsim presets lists them)"
)

SCENARIO = Record(
    {
        "name": Field(RunName(), doc="the default output folder is runs/<name>: " + NAME_RULE),
        "seed": Field(Number(integer=True, ge=0), default=0),
        "duration_s": Field(Number("s", gt=0, le=MAX_HORIZON_S), default=None),
        "include": Field(ListOf(Text()), default=[], doc=INCLUDE_DOC),
        "presets": Field(PRESETS, default=None, doc="presets, as in a library file"),
        "nodes": Field(MapOf(NODE, min_len=1, key_pattern=MEMBER_PATTERN, key_hint=NAME_HINT)),
        "links": Field(MapOf(LINK_ENTRY), default={}),
        "models": Field(MapOf(ModelChoice(), min_len=1)),
        "workload": Field(ListOf(WORKLOAD, min_len=1)),
        "placement": Field(PLACEMENT, default=None),
        "failures": FAILURES,
        "memory_series": Field(
            Boolean(),
            default=False,
            doc="keep every change of each unit's memory in use: the memory table (trace "
            "full; docs/memory.md)",
        ),
        "plugins": Field(
            ListOf(Text(pattern=MODULE_PATTERN)),
            default=[],
            doc="Python modules imported first, in every process (they register policies, "
            "schedulers...: docs/plugins.md); only an installed plug-in's modules, or those "
            "allowed with --allow-plugin (docs/security.md)",
        ),
        "scheduler": Field(
            Text(choices=SCHEDULERS.names, what="unit scheduler"),
            default="fcfs",
            doc="which ready op a free unit runs",
        ),
        "energy_window": Field(ENERGY_WINDOW, default=None, doc=ENERGY_WINDOW_DOC),
        "sweep": Field(SWEEP, default=None, doc="for `socsim sweep`; `socsim run` ignores it"),
        "score": Field(SCORE, default=None, doc="for `socsim score`; `socsim run` ignores it"),
    },
    name="scenario",
)

LIBRARY = Record(
    {
        "include": Field(ListOf(Text()), default=[], doc=INCLUDE_DOC),
        "presets": Field(PRESETS, default=None),
    },
    name="library file",
)
