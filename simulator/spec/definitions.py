"""The scenario format as schema data (the single source of truth for keys and units).

YAML keys carry their unit (``latency_ms``, ``bandwidth_mbps``, ``peak_gflops``);
``Field.to`` names the SI value the loader produces (``latency_s``, ``bandwidth_bps``,
``peak_flops``). ``docs/scenario-format.md`` documents the same tables.
"""

from __future__ import annotations

import math
from typing import Any

from simulator.failures import ON_FAILURE
from simulator.graph.model import OP_KINDS
from simulator.hardware.governors import GOVERNORS
from simulator.hardware.thermal import PHONE_THERMAL
from simulator.hardware.units import MEMORY_POLICIES, NODE_ROLES, SYNC_MECHANISMS, UNIT_KINDS
from simulator.limits import (
    MAX_CORES,
    MAX_HORIZON_S,
    MAX_POWER_W,
    MAX_REQUESTS,
    THERMAL_C_J_PER_K,
    THERMAL_R_K_PER_W,
)
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
from simulator.spec.fleets import FLEET
from simulator.spec.linkdefs import LINK_ENTRY, MEMBER_PATTERN, NAME_PATTERN
from simulator.spec.modeldefs import DTYPES, ModelChoice
from simulator.spec.predictordefs import PREDICTOR
from simulator.spec.requestdefs import (
    ENERGY_WINDOW,
    ENERGY_WINDOW_DOC,
    INPUT,
    INPUT_DOC,
    MAX_BYTES,
    RESPONSE_DOC,
)
from simulator.spec.scoredefs import SCORE
from simulator.spec.stochdefs import BACKGROUND, BACKGROUND_DOC, VARIATION, VARIATION_DOC
from simulator.spec.sweepdefs import SWEEP
from simulator.spec.uncertain import Uncertain
from simulator.workload import ARRIVALS

GIGA, MEGA, MILLI, MICRO = 1e9, 1e6, 1e-3, 1e-6
#: Supply voltages, mV: near-threshold logic runs at ~300-500 mV [R] and 5 V was the TTL
#: supply; (V / V_top)^2 scales the dynamic power.
MIN_MV, MAX_MV = 50, 5000
#: A power (W) within the stated bound (simulator.limits).
WATTS = Number("W", ge=0, le=MAX_POWER_W)
#: Names of nodes, units, apps and link ends: no '.', which joins ``node.unit`` ids.
_NAME = NAME_PATTERN
_NAME_HINT = "letters, digits, '_' and '-'; a '.' would be ambiguous in 'node.unit' ids"

DVFS = Record(
    {
        "points": Field(
            ListOf(
                Record(
                    {
                        "mhz": Field(Number("MHz", MEGA, gt=0), to="frequency_hz"),
                        "mv": Field(Number("mV", MILLI, ge=MIN_MV, le=MAX_MV), to="voltage_v"),
                    },
                    name="operating point",
                ),
                min_len=1,
            ),
            doc="ascending frequency; the top point runs at peak_gflops and draws active_w",
        ),
        "static_w": Field(WATTS, default=0.0, doc="leakage while busy, any level"),
        "throttled_max_mhz": Field(
            Number("MHz", MEGA, gt=0),
            default=None,
            to="throttled_max_hz",
            doc="highest frequency while the node is throttled (default: the lowest point)",
        ),
        "governor": Field(
            Tagged("name", GOVERNORS.schemas, what="governor", default="performance"),
            default={"name": "performance"},
        ),
    },
    name="dvfs",
)

CACHE_LEVEL = Record(
    {
        "name": Field(Text(pattern=_NAME), doc="unique in the unit's hierarchy; not 'dram'"),
        "size_kb": Field(
            Number("KiB", 1024.0, gt=0),
            to="size_bytes",
            doc="capacity one op on the unit can use (1 KiB = 1024 B); grows outward",
        ),
        "bandwidth_gb_s": Field(
            Number("GB/s", GIGA, gt=0),
            to="bandwidth_bytes_per_s",
            doc="the unit's streaming rate from this level; >= the next level out and DRAM",
        ),
    },
    name="cache level",
)
CACHES_DOC = "memory hierarchy in front of DRAM, innermost first (docs/cost-model.md)"

UNIT = Record(
    {
        "kind": Field(Text(choices=UNIT_KINDS, what="unit kind")),
        "cores": Field(Number(integer=True, ge=1, le=MAX_CORES), default=1),
        "peak_gflops": Field(
            MapOf(Uncertain(Number("GFLOP/s per core", GIGA, gt=0)), keys=DTYPES),
            default={},
            to="peak_flops",
        ),
        "efficiency": Field(
            MapOf(Uncertain(Number(gt=0, le=1)), keys=(*OP_KINDS, "default")),
            default={"default": 1.0},
        ),
        "memory_bandwidth_gb_s": Field(
            Uncertain(Number("GB/s", GIGA, gt=0, unbounded=True)),
            default=math.inf,
            to="memory_bandwidth_bytes_per_s",
            doc="DRAM streaming rate; absent with peak_gflops and no caches: warned "
            "(UnitAssumptionWarning), write unbounded to mean it",
        ),
        "dispatch_us": Field(Uncertain(Number("µs", MICRO, ge=0)), default=0.0, to="dispatch_s"),
        "idle_w": Field(Uncertain(WATTS), default=0.0),
        "active_w": Field(Uncertain(WATTS), default=0.0),
        "memory_mb": Field(
            Number("MB", MEGA, gt=0, unbounded=True), default=math.inf, to="memory_bytes"
        ),
        "cores_per_op": Field(
            Number(integer=True, ge=1, le=MAX_CORES),
            default=None,
            doc="cores one op uses (default: all)",
        ),
        "dvfs": Field(
            DVFS, default=None, doc="operating points and governor (docs/dvfs-thermal.md)"
        ),
        "barrier_us": Field(
            Number("µs", MICRO, ge=0),
            default=0.0,
            to="barrier_s",
            doc="per-op barrier per doubling of cores: barrier × log2(cores used)",
        ),
        "supports": Field(ListOf(Text(choices=OP_KINDS, what="op kind"), min_len=1), default=None),
        "fused_kernels": Field(
            Boolean(),
            default=True,
            doc="the kernel library runs fused ops (docs/techniques.md); false: they fall back",
        ),
        "sparse_efficiency": Field(
            Number(ge=0, le=1),
            default=0.0,
            doc="share of a weight-pruned op's zero MACs its sparse kernels skip (0: none)",
        ),
        "predictor": Field(
            PREDICTOR,
            default=None,
            doc="learned kernel predictor for the kinds it covers (docs/predictors.md)",
        ),
        "caches": Field(ListOf(CACHE_LEVEL), default=[], doc=CACHES_DOC),
        "variation": Field(VARIATION, default={}, doc=VARIATION_DOC),
        "background": Field(BACKGROUND, default=None, doc=BACKGROUND_DOC),
    },
    name="compute unit",
)

#: From absolute zero to 1,000 °C (solder melts near 220 °C; silicon stops working far
#: below 1,000 °C): P x R + T stays finite.
_CELSIUS = Number("°C", ge=-273.15, le=1000)

THERMAL = Record(
    {
        "resistance_k_per_w": Field(
            Number("K/W", ge=THERMAL_R_K_PER_W[0], le=THERMAL_R_K_PER_W[1]),
            default=PHONE_THERMAL.resistance_k_per_w,
            doc="phone preset",
        ),
        "capacitance_j_per_k": Field(
            Number("J/K", ge=THERMAL_C_J_PER_K[0], le=THERMAL_C_J_PER_K[1]),
            default=PHONE_THERMAL.capacitance_j_per_k,
            doc="phone preset",
        ),
        "ambient_c": Field(_CELSIUS, default=PHONE_THERMAL.ambient_c),
        "throttle_c": Field(_CELSIUS, default=PHONE_THERMAL.throttle_c),
        "release_c": Field(_CELSIUS, default=PHONE_THERMAL.release_c),
    },
    name="thermal model",
)

SYNC_PAIR = Record(
    {
        "units": Field(ListOf(Text(), min_len=2, max_len=2), doc="two unit names of the node"),
        "mechanism": Field(Text(choices=SYNC_MECHANISMS), default="shared_memory_fence"),
        "sync_us": Field(Number("µs", MICRO, ge=0), to="sync_s"),
    },
    name="sync pair",
)

NODE = Record(
    {
        "role": Field(Text(choices=NODE_ROLES, what="node role"), default="device"),
        "sync_us": Field(Uncertain(Number("µs", MICRO, ge=0)), default=0.0, to="sync_s"),
        "shared_memory_bandwidth_gb_s": Field(
            Number("GB/s", GIGA, gt=0, unbounded=True),
            default=math.inf,
            to="shared_memory_bandwidth_bytes_per_s",
            doc="copies between the node's units; absent with 2+ units: warned "
            "(UnitAssumptionWarning), write unbounded to mean it",
        ),
        "dram_bandwidth_gb_s": Field(
            Number("GB/s", GIGA, gt=0, unbounded=True),
            default=None,
            to="dram_bandwidth_bytes_per_s",
            doc="DRAM bandwidth all units pull together; absent: the largest unit's",
        ),
        "units": Field(MapOf(UNIT, min_len=1, key_pattern=_NAME, key_hint=_NAME_HINT)),
        "sync_pairs": Field(ListOf(SYNC_PAIR), default=[], doc="sync cost of given unit pairs"),
        "thermal": Field(
            THERMAL, default=None, doc="lumped RC model; throttles the node's DVFS units"
        ),
        "battery_wh": Field(
            Number("Wh", 3600.0, gt=0),
            default=None,
            to="battery_j",
            doc="the run stops when the node's energy reaches it",
        ),
        "caches": Field(
            ListOf(CACHE_LEVEL),
            default=[],
            doc="levels shared by all units (SLC, shared L3), seen after each unit's own",
        ),
        "load_factor": Field(
            Number(gt=0),
            default=1.0,
            doc="Neurosurgeon's K_load: placement estimates multiply the node's op times "
            "by it (the run does not; docs/placement.md#load-aware-estimates)",
        ),
        "memory_gb": Field(
            Number("GB", GIGA, gt=0, unbounded=True),
            default=math.inf,
            to="memory_bytes",
            doc="memory pool all units share: weights + live activations (docs/memory.md)",
        ),
        "memory_policy": Field(
            Text(choices=MEMORY_POLICIES),
            default="refuse",
            doc="refuse: weights that do not fit are an error, a request that does not "
            "fit yet waits to start; allow: run anyway (docs/memory.md)",
        ),
        "fleet": Field(
            FLEET,
            default=None,
            doc="instantiate this node count times, as <name>[i], varied per member "
            "(docs/fleets.md)",
        ),
    },
    name="node",
)

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
            doc="replica index a request whose hop timed out restarts on; default: the "
            "first replica that uses no network",
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
        "nodes": Field(MapOf(NODE, min_len=1, key_pattern=MEMBER_PATTERN, key_hint=_NAME_HINT)),
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
