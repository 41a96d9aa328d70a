"""The scenario format as schema data (the single source of truth for keys and units).

YAML keys carry their unit (``latency_ms``, ``bandwidth_mbps``, ``peak_gflops``);
``Field.to`` names the SI value the loader produces (``latency_s``, ``bandwidth_bps``,
``peak_flops``). ``docs/scenario-format.md`` documents the same tables.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from simulator.graph.model import DTYPE_BYTES, OP_KINDS
from simulator.graph.zoo import zoo_names, zoo_options
from simulator.hardware.governors import GOVERNORS
from simulator.hardware.thermal import PHONE_THERMAL
from simulator.hardware.units import NODE_ROLES, SYNC_MECHANISMS, UNIT_KINDS
from simulator.network.impairments import CAPACITY_DISTRIBUTIONS, JITTERS
from simulator.network.radio import RADIO_MODELS
from simulator.network.topology import SHARING
from simulator.placement.base import POLICIES
from simulator.placement.objectives import OBJECTIVES, WEIGHT_KEYS
from simulator.scheduling import DISPATCHERS, SCHEDULERS, AdaptiveOptions
from simulator.schema import (
    INVALID,
    Boolean,
    Context,
    Field,
    ListOf,
    Loc,
    MapOf,
    Number,
    Record,
    Schema,
    Tagged,
    Text,
    mark_of,
)
from simulator.spec.sweepdefs import SWEEP
from simulator.workload import ARRIVALS

DTYPES = tuple(DTYPE_BYTES)
GIGA, MEGA, MILLI, MICRO = 1e9, 1e6, 1e-3, 1e-6
#: Names of nodes, units, apps and link ends: no '.', which joins ``node.unit`` ids.
_NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
_NAME_HINT = "letters, digits, '_' and '-'; a '.' would be ambiguous in 'node.unit' ids"

DVFS = Record(
    {
        "points": Field(
            ListOf(
                Record(
                    {
                        "mhz": Field(Number("MHz", MEGA, gt=0), to="frequency_hz"),
                        "mv": Field(Number("mV", MILLI, gt=0), to="voltage_v"),
                    },
                    name="operating point",
                ),
                min_len=1,
            ),
            doc="ascending frequency; the top point runs at peak_gflops and draws active_w",
        ),
        "static_w": Field(Number("W", ge=0), default=0.0, doc="leakage while busy, any level"),
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

UNIT = Record(
    {
        "kind": Field(Text(choices=UNIT_KINDS, what="unit kind")),
        "cores": Field(Number(integer=True, ge=1), default=1),
        "peak_gflops": Field(
            MapOf(Number("GFLOP/s per core", GIGA, gt=0), keys=DTYPES), default={}, to="peak_flops"
        ),
        "efficiency": Field(
            MapOf(Number(gt=0, le=1), keys=(*OP_KINDS, "default")), default={"default": 1.0}
        ),
        "memory_bandwidth_gb_s": Field(
            Number("GB/s", GIGA, gt=0), default=math.inf, to="memory_bandwidth_bytes_per_s"
        ),
        "dispatch_us": Field(Number("µs", MICRO, ge=0), default=0.0, to="dispatch_s"),
        "idle_w": Field(Number("W", ge=0), default=0.0),
        "active_w": Field(Number("W", ge=0), default=0.0),
        "memory_mb": Field(Number("MB", MEGA, gt=0), default=math.inf, to="memory_bytes"),
        "cores_per_op": Field(
            Number(integer=True, ge=1), default=None, doc="cores one op uses (default: all)"
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
    },
    name="compute unit",
)

THERMAL = Record(
    {
        "resistance_k_per_w": Field(
            Number("K/W", gt=0), default=PHONE_THERMAL.resistance_k_per_w, doc="phone preset"
        ),
        "capacitance_j_per_k": Field(
            Number("J/K", gt=0), default=PHONE_THERMAL.capacitance_j_per_k, doc="phone preset"
        ),
        "ambient_c": Field(Number("°C"), default=PHONE_THERMAL.ambient_c),
        "throttle_c": Field(Number("°C"), default=PHONE_THERMAL.throttle_c),
        "release_c": Field(Number("°C"), default=PHONE_THERMAL.release_c),
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
        "sync_us": Field(Number("µs", MICRO, ge=0), default=0.0, to="sync_s"),
        "shared_memory_bandwidth_gb_s": Field(
            Number("GB/s", GIGA, gt=0), default=math.inf, to="shared_memory_bandwidth_bytes_per_s"
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
    },
    name="node",
)

RADIO = Tagged("model", RADIO_MODELS.schemas, what="radio model", default="constant")
BANDWIDTH_DISTRIBUTION = Tagged("dist", CAPACITY_DISTRIBUTIONS.schemas, what="distribution")
JITTER = Tagged("dist", JITTERS.schemas, what="jitter distribution")


class TraceFile(Schema):
    """A CSV file of ``time_s,bandwidth_mbps`` rows (a header line is allowed), read at
    load; the path is relative to the file that names it."""

    def describe(self) -> str:
        return "the path of a CSV file with columns time_s, bandwidth_mbps"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, str) or not value:
            return ctx.problem(loc, f"expected {self.describe()}")
        mark = mark_of(loc.container, loc.key)
        base = Path(mark.file).parent if mark is not None else Path(ctx.base_dir or ".")
        path = base / value
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            return ctx.problem(loc, f"cannot read bandwidth trace {path}: {exc}")
        steps = []
        for number, line in enumerate(lines, start=1):
            cells = [c.strip() for c in line.split(",")]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                time_s, mbps = float(cells[0]), float(cells[1])
            except (ValueError, IndexError):
                if not steps and number == 1:
                    continue  # a header
                return ctx.problem(
                    loc, f"{path}:{number}: expected 'time_s,bandwidth_mbps', got '{line}'"
                )
            if not (math.isfinite(time_s) and math.isfinite(mbps) and time_s >= 0 and mbps >= 0):
                return ctx.problem(loc, f"{path}:{number}: times and bandwidths must be >= 0")
            if steps and time_s <= steps[-1][0]:
                return ctx.problem(loc, f"{path}:{number}: times must increase")
            steps.append((time_s, mbps * MEGA))
        if not steps:
            return ctx.problem(loc, f"bandwidth trace {path} has no rows")
        return steps


_TRACE_POINT = ListOf(Number(ge=0), min_len=2, max_len=2)
_INTERVAL = ListOf(Number("s", ge=0), min_len=2, max_len=2)

LINK = Record(
    {
        "ends": Field(ListOf(Text(pattern=_NAME), min_len=2, max_len=2)),
        "technology": Field(Text(), default=""),
        "latency_ms": Field(Number("ms", MILLI, ge=0), to="latency_s"),
        "bandwidth_mbps": Field(Number("Mbit/s", MEGA, gt=0), to="bandwidth_bps"),
        "reverse_bandwidth_mbps": Field(
            Number("Mbit/s", MEGA, gt=0), default=None, to="reverse_bandwidth_bps"
        ),
        "radio": Field(RADIO, default=None),
        "sharing": Field(
            Text(choices=SHARING),
            default="fifo",
            doc="fifo: one transfer at a time; fair: equal shares",
        ),
        "bandwidth_trace_mbps": Field(
            ListOf(_TRACE_POINT, min_len=1),
            default=None,
            doc="[[time_s, Mbit/s], ...] for ends[0] -> ends[1]",
        ),
        "bandwidth_trace_file": Field(TraceFile(), default=None, doc="CSV: time_s,bandwidth_mbps"),
        "reverse_bandwidth_trace_mbps": Field(
            ListOf(_TRACE_POINT, min_len=1), default=None, doc="the same for ends[1] -> ends[0]"
        ),
        "reverse_bandwidth_trace_file": Field(TraceFile(), default=None),
        "outages_s": Field(
            ListOf(_INTERVAL), default=[], doc="[[start_s, end_s], ...]: the link carries nothing"
        ),
        "bandwidth_distribution": Field(
            BANDWIDTH_DISTRIBUTION, default=None, doc="random bandwidth, ends[0] -> ends[1]"
        ),
        "reverse_bandwidth_distribution": Field(BANDWIDTH_DISTRIBUTION, default=None),
        "jitter": Field(JITTER, default=None, doc="added to latency_ms per hop, both ways"),
        "loss_rate": Field(Number(ge=0, le=0.5), default=0.0, doc="per packet; re-sent"),
        "mtu_bytes": Field(Number("bytes", integer=True, ge=1), default=1500),
    },
    name="link",
)

INLINE_OP = Record(
    {
        "name": Field(Text()),
        "kind": Field(Text(choices=OP_KINDS, what="op kind"), default="custom"),
        "flops": Field(Number("FLOPs", ge=0), default=None),
        "macs": Field(Number("multiply-adds", ge=0), default=0.0),
        "params": Field(Number(integer=True, ge=0), default=0),
        "input_elems": Field(Number(integer=True, ge=0), default=0),
        "output_elems": Field(Number(integer=True, ge=0), default=0),
        "dtype": Field(Text(choices=DTYPES, what="dtype"), default="fp32"),
        "parallel_fraction": Field(Number(ge=0, le=1), default=1.0),
        "time_ms": Field(MapOf(Number("ms", MILLI, ge=0), min_len=1), default={}, to="time_s"),
    },
    name="op",
)

INLINE_EDGE = Record(
    {
        "src": Field(Text()),
        "dst": Field(Text()),
        "bytes": Field(Number("bytes", integer=True, ge=0), default=None),
        "comm_ms": Field(Number("ms", MILLI, ge=0), default=None, to="comm_s"),
    },
    name="edge",
)

INLINE_MODEL = Record(
    {
        "ops": Field(ListOf(INLINE_OP, min_len=1)),
        "edges": Field(ListOf(INLINE_EDGE), default=[]),
    },
    name="inline model",
)


class ZooModel(Schema):
    """``{zoo: name, dtype: ..., options: {...}}``; options come from the builder's signature."""

    def describe(self) -> str:
        return "a zoo model: zoo, dtype, options"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        outer = Record(
            {
                "zoo": Field(Text(choices=tuple(zoo_names()), what="zoo model")),
                "dtype": Field(Text(choices=DTYPES, what="dtype"), default="fp32"),
                "options": Field(MapOf(_Any()), default={}),
            },
            name="zoo model",
        )
        out = outer.check(value, loc, ctx)
        if out is INVALID or not out["options"]:
            return out
        options_schema = Record(
            {
                name: Field(_option_schema(ann), default=d)
                for name, (ann, d) in zoo_options(out["zoo"]).items()
            },
            name=f"{out['zoo']} options",
        )
        checked = options_schema.check(value["options"], loc.child(value, "options"), ctx)
        if checked is INVALID:
            return INVALID
        out["options"] = {k: v for k, v in checked.items() if k in value["options"]}
        return out


class _Any(Schema):
    def describe(self) -> str:
        return "any value"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        return value


def _option_schema(annotation: Any) -> Schema:
    if annotation is bool:
        return Boolean()
    if annotation is int:
        return Number(integer=True)
    if annotation is float:
        return Number()
    if annotation is str:
        return Text()
    return _Any()


class ModelChoice(Schema):
    """A model: from the zoo (``zoo:``) or inline (``ops:`` and ``edges:``)."""

    def describe(self) -> str:
        return "a model with 'zoo' or 'ops'"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if isinstance(value, dict) and "zoo" in value:
            out = ZooModel().check(value, loc, ctx)
            return out if out is INVALID else {"source": "zoo", **out}
        if isinstance(value, dict) and "ops" in value:
            out = INLINE_MODEL.check(value, loc, ctx)
            return out if out is INVALID else {"source": "inline", **out}
        return ctx.problem(loc, "a model needs 'zoo: <name>' or 'ops:' (with optional 'edges:')")


#: ``presets:`` of a library file or a scenario; bodies are checked where they are used
#: (``validate_library`` checks them all).
PRESETS = Record(
    {
        "nodes": Field(MapOf(_Any()), default={}),
        "links": Field(MapOf(_Any()), default={}),
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
        "app": Field(Text(pattern=_NAME)),
        "model": Field(Text()),
        "source": Field(Text()),
        "arrival": Field(ARRIVAL),
        "count": Field(Number(integer=True, ge=1), default=None),
        "duration_s": Field(Number("s", gt=0), default=None),
        "deadline_ms": Field(Number("ms", MILLI, gt=0), default=None, to="deadline_s"),
        "priority": Field(Number(integer=True), default=0),
        "placement": Field(PLACEMENT, default=None),
        "replicas": Field(
            ListOf(PLACEMENT, min_len=1), default=[], doc="placements to balance requests over"
        ),
        "dispatch": Field(
            Text(choices=tuple(DISPATCHERS)),
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
    },
    name="workload entry",
)

SCENARIO = Record(
    {
        "name": Field(Text()),
        "seed": Field(Number(integer=True, ge=0), default=0),
        "duration_s": Field(Number("s", gt=0), default=None),
        "include": Field(ListOf(Text()), default=[]),
        "presets": Field(PRESETS, default=None, doc="presets, as in a library file"),
        "nodes": Field(MapOf(NODE, min_len=1, key_pattern=_NAME, key_hint=_NAME_HINT)),
        "links": Field(MapOf(LINK), default={}),
        "models": Field(MapOf(ModelChoice(), min_len=1)),
        "workload": Field(ListOf(WORKLOAD, min_len=1)),
        "placement": Field(PLACEMENT, default=None),
        "scheduler": Field(
            Text(choices=tuple(SCHEDULERS)), default="fcfs", doc="which ready op a free unit runs"
        ),
        "sweep": Field(SWEEP, default=None, doc="for `socsim sweep`; `socsim run` ignores it"),
    },
    name="scenario",
)

LIBRARY = Record(
    {
        "include": Field(ListOf(Text()), default=[]),
        "presets": Field(PRESETS, default=None),
    },
    name="library file",
)
