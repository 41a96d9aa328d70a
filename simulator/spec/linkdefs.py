"""Link sections of the scenario format: latency, bandwidth, radio, traces, impairments."""

from __future__ import annotations

from typing import Any

from simulator.limits import MAX_HORIZON_S, MAX_OUTAGES, MAX_TRACE_ROWS, MIN_BANDWIDTH_BPS
from simulator.network.impairments import CAPACITY_DISTRIBUTIONS, JITTERS
from simulator.network.medium import FAIRNESS
from simulator.network.radio import RADIO_MODELS
from simulator.network.topology import SHARING
from simulator.schema import (
    INVALID,
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
)
from simulator.spec.csvfile import TraceFile
from simulator.spec.mobilitydefs import MOBILITY
from simulator.spec.uncertain import Uncertain

MEGA, MILLI = 1e6, 1e-3
#: Names of nodes, units, apps and link ends: no '.', which joins ``node.unit`` ids.
NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_\-]*"
#: A name or a fleet member's (``phone[17]``: docs/fleets.md), where a node or app is named.
MEMBER_PATTERN = NAME_PATTERN + r"(\[[0-9]+\])?"

RADIO = Tagged("model", RADIO_MODELS.schemas, what="radio model", default="constant")
BANDWIDTH_DISTRIBUTION = Tagged("dist", CAPACITY_DISTRIBUTIONS.schemas, what="distribution")
JITTER = Tagged("dist", JITTERS.schemas, what="jitter distribution")


_TIME_S = Number("s", ge=0, le=MAX_HORIZON_S)
#: A link's bandwidth, at least MIN_BANDWIDTH_BPS (simulator.limits).
LINK_MBPS = Number("Mbit/s", MEGA, ge=MIN_BANDWIDTH_BPS / MEGA)


class TracePoint(Schema):
    """``[time_s, Mbit/s]`` -> ``(time_s, bit/s)``, converted here like every number."""

    _PAIR = ListOf(Number(), min_len=2, max_len=2)
    _PARTS = (_TIME_S, Number("Mbit/s", MEGA, ge=0))

    def describe(self) -> str:
        return "[time_s, Mbit/s]"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if self._PAIR.check(value, loc, ctx) is INVALID:
            return INVALID
        out = [
            part.check(v, loc.child(value, i), ctx)
            for i, (part, v) in enumerate(zip(self._PARTS, value, strict=True))
        ]
        return INVALID if any(v is INVALID for v in out) else tuple(out)


_TRACE_POINT = TracePoint()
_INTERVAL = ListOf(_TIME_S, min_len=2, max_len=2)

LINK = Record(
    {
        "ends": Field(ListOf(Text(pattern=MEMBER_PATTERN), min_len=2, max_len=2)),
        "technology": Field(Text(), default=""),
        "latency_ms": Field(Uncertain(Number("ms", MILLI, ge=0)), to="latency_s"),
        "bandwidth_mbps": Field(Uncertain(LINK_MBPS), to="bandwidth_bps"),
        "reverse_bandwidth_mbps": Field(
            Uncertain(LINK_MBPS), default=None, to="reverse_bandwidth_bps"
        ),
        "radio": Field(RADIO, default=None),
        "sharing": Field(
            Text(choices=SHARING),
            default="fifo",
            doc="fifo: one transfer at a time; fair: equal shares",
        ),
        "bandwidth_trace_mbps": Field(
            ListOf(_TRACE_POINT, min_len=1, max_len=MAX_TRACE_ROWS),
            default=None,
            doc="[[time_s, Mbit/s], ...] for ends[0] -> ends[1]",
        ),
        "bandwidth_trace_file": Field(TraceFile(), default=None, doc="CSV: time_s,bandwidth_mbps"),
        "reverse_bandwidth_trace_mbps": Field(
            ListOf(_TRACE_POINT, min_len=1, max_len=MAX_TRACE_ROWS),
            default=None,
            doc="the same for ends[1] -> ends[0]",
        ),
        "reverse_bandwidth_trace_file": Field(TraceFile(), default=None),
        "outages_s": Field(
            ListOf(_INTERVAL, max_len=MAX_OUTAGES),
            default=[],
            doc="[[start_s, end_s], ...]: the link carries nothing",
        ),
        "bandwidth_distribution": Field(
            BANDWIDTH_DISTRIBUTION, default=None, doc="random bandwidth, ends[0] -> ends[1]"
        ),
        "reverse_bandwidth_distribution": Field(BANDWIDTH_DISTRIBUTION, default=None),
        "jitter": Field(JITTER, default=None, doc="added to latency_ms per hop, both ways"),
        "loss_rate": Field(Number(ge=0, le=0.5), default=0.0, doc="per packet; re-sent"),
        "mtu_bytes": Field(Number("bytes", integer=True, ge=1), default=1500),
        "mobility": Field(MOBILITY, default=None, doc="a moving end: rate by distance, handover"),
    },
    name="link",
)

STATION_RATE = Record(
    {
        "up_mbps": Field(LINK_MBPS, to="up_bps", doc="station -> access point"),
        "down_mbps": Field(LINK_MBPS, default=None, to="down_bps", doc="default: up_mbps"),
    },
    name="station rate",
)

#: ``kind: shared``: an access point (or cell) whose airtime its stations share.
MEDIUM = Record(
    {
        "access_point": Field(
            Text(pattern=MEMBER_PATTERN),
            doc="the node the access point is wired to (an edge server, a router node)",
        ),
        "stations": Field(
            ListOf(Text(pattern=MEMBER_PATTERN), min_len=1),
            doc="nodes or fleets attached; each gets a link named '<link>/<station>'",
        ),
        "technology": Field(Text(), default=""),
        "latency_ms": Field(Uncertain(Number("ms", MILLI, ge=0)), to="latency_s"),
        "bandwidth_mbps": Field(
            Uncertain(LINK_MBPS),
            to="bandwidth_bps",
            doc="a station's uplink rate alone on the medium (goodput)",
        ),
        "reverse_bandwidth_mbps": Field(
            Uncertain(LINK_MBPS),
            default=None,
            to="reverse_bandwidth_bps",
            doc="a station's downlink rate alone; default: bandwidth_mbps",
        ),
        "station_rates": Field(
            MapOf(STATION_RATE, key_pattern=MEMBER_PATTERN),
            default={},
            doc="per station (a node, a fleet for all its members, or a member): its own rates",
        ),
        "fairness": Field(
            Text(choices=FAIRNESS),
            default="throughput",
            doc="throughput: equal throughput (802.11 DCF, the performance anomaly); "
            "airtime: equal airtime (docs/fleets.md)",
        ),
        "radio": Field(RADIO, default=None, doc="each station's radio"),
    },
    name="shared medium",
)

#: Link kinds: a point-to-point link (the default) or a shared medium.
LINK_KINDS = {"point_to_point": LINK, "shared": MEDIUM}
LINK_ENTRY = Tagged("kind", lambda: LINK_KINDS, what="link kind", default="point_to_point")
