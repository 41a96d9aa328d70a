"""The ``mobility:`` block of a link: a moving end, access points, path loss, rate table,
handover (docs/mobility.md). Built into a :class:`~simulator.network.mobility.Coverage`
whose trace and interruptions become the link's bandwidth trace and outages."""

from __future__ import annotations

from collections.abc import Mapping

from simulator.errors import SocsimError
from simulator.limits import MAX_HORIZON_S, MAX_TRACE_ROWS
from simulator.network.mobility import (
    IN_FLIGHT,
    RATE_TABLES,
    AccessPoint,
    Coverage,
    Mobility,
    Path,
    PathLoss,
    RateTable,
    coverage,
    path_seed,
    random_waypoint,
)
from simulator.schema import Field, ListOf, MapOf, Number, Record, Text
from simulator.spec.csvfile import TraceFile

MEGA, MILLI = 1e6, 1e-3
_METRES = Number("m")
_PAIR_M = ListOf(Number("m", ge=0), min_len=2, max_len=2)
#: Most access points of one link: the sampling costs (samples x access points).
MAX_ACCESS_POINTS = 1000
POSITION_COLUMNS = ("time_s", "x_m", "y_m")

RANDOM_WAYPOINT = Record(
    {
        "area_m": Field(ListOf(Number("m", gt=0), min_len=2, max_len=2), doc="[width, height]"),
        "speed_mps": Field(
            ListOf(Number("m/s", gt=0), min_len=2, max_len=2), doc="[min, max], uniform"
        ),
        "pause_s": Field(ListOf(Number("s", ge=0), min_len=2, max_len=2), default=[0, 0]),
        "until_s": Field(Number("s", gt=0, le=MAX_HORIZON_S), doc="it stops moving then"),
        "start_m": Field(_PAIR_M, default=None, doc="[x, y]; default: drawn in the area"),
    },
    name="random_waypoint",
)

PATH_LOSS = Record(
    {
        "reference_loss_db": Field(Number("dB"), default=46.7, doc="free space, 1 m, 5.18 GHz"),
        "exponent": Field(Number(gt=0, le=10), default=3.5, doc="TGn model D, beyond breakpoint"),
        "reference_m": Field(Number("m", gt=0), default=1.0),
        "breakpoint_m": Field(
            Number("m", ge=0), default=10.0, doc="free-space slope up to it (0: none)"
        ),
    },
    name="path_loss",
)

HANDOVER = Record(
    {
        "interruption_ms": Field(Number("ms", MILLI, ge=0), default=0.0, to="interruption_s"),
        "hysteresis_db": Field(Number("dB", ge=0), default=3.0),
        "in_flight": Field(
            Text(choices=IN_FLIGHT),
            default="resend",
            doc="a transfer under way: resend it whole, or drop the attempt",
        ),
    },
    name="handover",
)


MOBILITY = Record(
    {
        "path_file": Field(
            TraceFile(POSITION_COLUMNS, (1.0, 1.0, 1.0), "position trace", signed=True),
            default=None,
            doc="CSV: time_s,x_m,y_m",
        ),
        "path_m": Field(
            ListOf(ListOf(Number(), min_len=3, max_len=3), min_len=1, max_len=MAX_TRACE_ROWS),
            default=None,
            doc="[[time_s, x_m, y_m], ...], linear in between",
        ),
        "random_waypoint": Field(RANDOM_WAYPOINT, default=None, doc="seeded by the scenario"),
        "access_points": Field(
            MapOf(
                Record({"x_m": Field(_METRES), "y_m": Field(_METRES)}, name="access point"),
                min_len=1,
            ),
        ),
        "tx_power_dbm": Field(Number("dBm", ge=-30, le=40), default=20.0),
        "path_loss": Field(PATH_LOSS, default={}),
        "rate_table": Field(
            Text(choices=tuple(RATE_TABLES), what="rate table"),
            default=None,
            doc="named table (default vht20_1ss)",
        ),
        "rate_table_dbm_mbps": Field(
            ListOf(ListOf(Number(), min_len=2, max_len=2), min_len=1, max_len=64),
            default=None,
            doc="[[min_rx_dbm, Mbit/s], ...] instead",
        ),
        "efficiency": Field(Number(gt=0, le=1), default=1.0, doc="throughput / PHY rate"),
        "step_ms": Field(
            Number("ms", MILLI, gt=0),
            default=None,  # 100 ms (Mobility.step_s): a default is not converted to SI
            to="step_s",
            doc="rate and handover sampling step (default 100 ms)",
        ),
        "handover": Field(HANDOVER, default={}),
    },
    exclusive=(("path_file", "path_m", "random_waypoint"),),
    name="mobility",
)


def build_coverage(spec: Mapping, link: str, seed: int) -> Coverage:
    """The coverage of a checked ``mobility:`` block of link ``link``.

    Raises
    ------
    SocsimError
        On inconsistent values (both rate tables, a sampling that needs too many rows, a
        node out of every access point's range at the end).
    """
    if spec["rate_table"] is not None and spec["rate_table_dbm_mbps"] is not None:
        raise SocsimError("give rate_table or rate_table_dbm_mbps, not both")
    if spec["rate_table_dbm_mbps"] is not None:
        rows = tuple((p, mbps * MEGA) for p, mbps in spec["rate_table_dbm_mbps"])
        table = RateTable(f"{link}.rate_table_dbm_mbps", rows)
    else:
        table = RATE_TABLES[spec["rate_table"] or "vht20_1ss"]
    if spec["random_waypoint"] is not None:
        rw = spec["random_waypoint"]
        lo, hi = rw["speed_mps"]
        if lo > hi or rw["pause_s"][0] > rw["pause_s"][1]:
            raise SocsimError("random_waypoint: give ranges as [min, max]")
        start = rw["start_m"]
        if start is not None and not (start[0] <= rw["area_m"][0] and start[1] <= rw["area_m"][1]):
            raise SocsimError("random_waypoint: start_m lies outside area_m")
        path = random_waypoint(
            path_seed(seed, link),
            tuple(rw["area_m"]),
            (lo, hi),
            tuple(rw["pause_s"]),
            rw["until_s"],
            tuple(start) if start is not None else None,
        )
    else:
        points = spec["path_m"] if spec["path_m"] is not None else spec["path_file"]
        path = Path(tuple(tuple(p) for p in points))
    step_s = spec["step_s"] if spec["step_s"] is not None else Mobility.step_s
    if path.end_s / step_s > MAX_TRACE_ROWS:
        raise SocsimError(
            f"the path lasts {path.end_s:g} s: sampling it every {step_s * 1e3:g} ms "
            f"gives more than {MAX_TRACE_ROWS:,} rows (MAX_TRACE_ROWS); raise step_ms"
        )
    if len(spec["access_points"]) > MAX_ACCESS_POINTS:
        raise SocsimError(f"more than {MAX_ACCESS_POINTS} access points (MAX_ACCESS_POINTS)")
    handover = spec["handover"]
    mobility = Mobility(
        path=path,
        access_points=tuple(
            AccessPoint(name, ap["x_m"], ap["y_m"]) for name, ap in spec["access_points"].items()
        ),
        table=table,
        path_loss=_path_loss(spec["path_loss"]),
        tx_power_dbm=spec["tx_power_dbm"],
        efficiency=spec["efficiency"],
        step_s=step_s,
        hysteresis_db=handover.get("hysteresis_db", 3.0),
        interruption_s=handover.get("interruption_s", 0.0),
        in_flight=handover.get("in_flight", "resend"),
    )
    result = coverage(mobility)
    if result.steps[-1][1] <= 0:
        raise SocsimError(
            f"the moving end is out of every access point's range at the path's end "
            f"({result.steps[-1][0]:g} s): transfers would wait forever; move an access "
            "point closer or end the path in range"
        )
    return result


def _path_loss(spec: Mapping) -> PathLoss:
    options = dict(spec)
    if options.get("breakpoint_m") == 0:
        options["breakpoint_m"] = None  # one slope from the reference distance
    return PathLoss(**options)
