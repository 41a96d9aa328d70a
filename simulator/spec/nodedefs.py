"""The scenario format's hardware section as schema data: nodes and their units.

A node (:data:`NODE`) holds compute units (:data:`UNIT`: peaks, efficiencies, memory
levels, DVFS operating points and governor, variation), sync pairs, a thermal model and
a cache hierarchy; :mod:`simulator.spec.platformbuild` builds them into
:mod:`simulator.hardware` objects. Part of :mod:`simulator.spec.definitions`, which
re-exports these names and puts them in the scenario.
"""

from __future__ import annotations

import math

from simulator.graph.model import OP_KINDS
from simulator.hardware.governors import GOVERNORS
from simulator.hardware.thermal import PHONE_THERMAL
from simulator.hardware.units import MEMORY_POLICIES, NODE_ROLES, SYNC_MECHANISMS, UNIT_KINDS
from simulator.limits import MAX_CORES, MAX_POWER_W, THERMAL_C_J_PER_K, THERMAL_R_K_PER_W
from simulator.schema import Boolean, Field, ListOf, MapOf, Number, Record, Tagged, Text
from simulator.spec.fleets import FLEET
from simulator.spec.linkdefs import NAME_PATTERN
from simulator.spec.modeldefs import DTYPES
from simulator.spec.predictordefs import PREDICTOR
from simulator.spec.stochdefs import BACKGROUND, BACKGROUND_DOC, VARIATION, VARIATION_DOC
from simulator.spec.uncertain import Uncertain

GIGA, MEGA, MILLI, MICRO = 1e9, 1e6, 1e-3, 1e-6
#: Supply voltages, mV: near-threshold logic runs at ~300-500 mV [R] and 5 V was the TTL
#: supply; (V / V_top)^2 scales the dynamic power.
MIN_MV, MAX_MV = 50, 5000
#: A power (W) within the stated bound (simulator.limits).
WATTS = Number("W", ge=0, le=MAX_POWER_W)
#: Names of nodes, units, apps and link ends: no '.', which joins ``node.unit`` ids.
_NAME = NAME_PATTERN
#: What such a name may hold, for the message of a name that does not match.
NAME_HINT = "letters, digits, '_' and '-'; a '.' would be ambiguous in 'node.unit' ids"

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
        "units": Field(MapOf(UNIT, min_len=1, key_pattern=_NAME, key_hint=NAME_HINT)),
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
        "private": Field(
            Boolean(),
            default=False,
            doc="only apps sourced on this node run ops on its units when a policy chooses "
            "among units (heft, cpop, peft, greedy_eft, the run-time rules); a unit an "
            "option names may still be here. Fleet members: true unless the node says "
            "false (docs/fleets.md)",
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
