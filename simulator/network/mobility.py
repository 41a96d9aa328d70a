"""Mobility: a node's path, the link rate it gets from its access point, handovers (pure).

A mobile link joins a moving node (a phone) to the rest of the network through one of
several access points at fixed positions. At every sample time ``k * step_s`` the node's
position gives the received power from each access point (log-distance path loss), and
the serving access point's power gives the PHY rate through a rate table (minimum
received power per MCS). The result is a :class:`Coverage`: a bandwidth trace (the
serving access point's rate, held for one step) and the handovers, each an interruption
during which the link carries nothing. The engine reuses its bandwidth-trace and outage
machinery for both (:meth:`simulator.network.topology.Link.capacity_steps`); only the
requests in flight at a handover need the engine (``simulator/engine/handover.py``).

Sources (docs/mobility.md): log-distance path loss, Rappaport, *Wireless Communications*,
2nd ed., 2002, eq. 4.68; the dual-slope form (free space to a breakpoint, then a steeper
exponent) and its defaults (breakpoint 10 m, exponent 3.5) are IEEE 802.11 TGn channel
model D (Erceg et al., IEEE 802.11-03/940r4, 2004); the reference loss is free space at
1 m and 5.18 GHz (Friis: 20 log10(4 pi d f / c) = 46.7 dB); the rate tables are the VHT
(802.11ac) receiver minimum input sensitivities and the VHT-MCS data rates of IEEE Std
802.11-2016 clause 21 (one spatial stream, 800 ns guard interval).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from simulator.errors import SocsimError

MEGA = 1e6
#: spawn-key tag of the random-waypoint streams ("mob")
_MOBILITY_STREAMS = 0x6D6F62
#: in-flight policies at a handover: resend the transfer from its first bit, or drop the
#: request's attempt (an adaptive app redoes it on its fallback replica)
IN_FLIGHT: tuple[str, ...] = ("resend", "drop")

# (minimum received power dBm, PHY rate Mbit/s) per VHT-MCS, one spatial stream, 800 ns GI
# (IEEE Std 802.11-2016 clause 21: receiver minimum input sensitivity; VHT-MCS rate tables;
# MCS 9 is not valid at 20 MHz with one stream). 80 MHz sensitivities are 6 dB above 20 MHz.
_VHT20: tuple[tuple[float, float], ...] = (
    (-82, 6.5), (-79, 13.0), (-77, 19.5), (-74, 26.0), (-70, 39.0), (-66, 52.0),
    (-65, 58.5), (-64, 65.0), (-59, 78.0),
)  # fmt: skip
_VHT80: tuple[tuple[float, float], ...] = (
    (-76, 29.3), (-73, 58.5), (-71, 87.8), (-68, 117.0), (-64, 175.5), (-60, 234.0),
    (-59, 263.3), (-58, 292.5), (-53, 351.0), (-51, 390.0),
)  # fmt: skip


@dataclass(frozen=True)
class RateTable:
    """PHY rate as a step function of received power.

    Attributes
    ----------
    name : str
    rows : tuple of (min_rx_dbm, rate_bps)
        Increasing in both: a rate applies from its minimum received power up.
    """

    name: str
    rows: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        rows = tuple((float(p), float(r)) for p, r in self.rows)
        object.__setattr__(self, "rows", rows)
        if not rows:
            raise SocsimError(f"rate table '{self.name}' has no rows")
        for (p0, r0), (p1, r1) in itertools.pairwise(rows):
            if not (p1 > p0 and r1 > r0):
                raise SocsimError(
                    f"rate table '{self.name}': received powers and rates must both increase "
                    f"row by row, got [{p0:g}, {r0 / MEGA:g}] then [{p1:g}, {r1 / MEGA:g}]"
                )
        if rows[0][1] <= 0:
            raise SocsimError(f"rate table '{self.name}': rates must be > 0")

    @property
    def max_bps(self) -> float:
        """The table's highest rate (bit/s)."""
        return self.rows[-1][1]

    def rate_bps(self, rx_dbm: np.ndarray) -> np.ndarray:
        """Rate (bit/s) at each received power (dBm); 0 below the lowest row."""
        powers = np.array([p for p, _ in self.rows])
        rates = np.array([0.0, *(r for _, r in self.rows)])
        return rates[np.searchsorted(powers, rx_dbm, side="right")]


RATE_TABLES: dict[str, RateTable] = {
    "vht20_1ss": RateTable("vht20_1ss", tuple((p, r * MEGA) for p, r in _VHT20)),
    "vht80_1ss": RateTable("vht80_1ss", tuple((p, r * MEGA) for p, r in _VHT80)),
}


@dataclass(frozen=True)
class PathLoss:
    """Log-distance path loss (dB), optionally dual-slope.

    ``PL(d) = PL0 + 10 n log10(d / d0)`` for ``d >= d0`` (``PL0`` below ``d0``). With
    ``breakpoint_m``, the slope is free space's (n = 2) up to the breakpoint and
    ``exponent`` beyond it (TGn channel models).

    Attributes
    ----------
    reference_loss_db : float
        ``PL0``, the loss at ``reference_m``.
    exponent : float
        ``n`` (beyond the breakpoint when there is one).
    reference_m : float
    breakpoint_m : float or None
    """

    reference_loss_db: float = 46.7
    exponent: float = 3.5
    reference_m: float = 1.0
    breakpoint_m: float | None = 10.0

    def __post_init__(self) -> None:
        if not (self.exponent > 0 and self.reference_m > 0):
            raise SocsimError("path loss: exponent and reference_m must be > 0")
        if self.breakpoint_m is not None and self.breakpoint_m < self.reference_m:
            raise SocsimError("path loss: breakpoint_m must be >= reference_m")

    def loss_db(self, distance_m: np.ndarray) -> np.ndarray:
        """Loss (dB) at each distance (m); non-decreasing in distance."""
        d = np.maximum(np.asarray(distance_m, dtype=float), self.reference_m)
        if self.breakpoint_m is None:
            return self.reference_loss_db + 10 * self.exponent * np.log10(d / self.reference_m)
        near = np.minimum(d, self.breakpoint_m)
        far = np.maximum(d, self.breakpoint_m)
        return (
            self.reference_loss_db
            + 20 * np.log10(near / self.reference_m)
            + 10 * self.exponent * np.log10(far / self.breakpoint_m)
        )


@dataclass(frozen=True)
class Path:
    """A node's positions over time: ``(time_s, x_m, y_m)`` points, linear in between,
    the first before the first time and the last after the last."""

    points: tuple[tuple[float, float, float], ...]

    def __post_init__(self) -> None:
        points = tuple((float(t), float(x), float(y)) for t, x, y in self.points)
        object.__setattr__(self, "points", points)
        if not points:
            raise SocsimError("a path needs at least one (time_s, x_m, y_m) point")
        times = [t for t, _, _ in points]
        if any(b <= a for a, b in itertools.pairwise(times)) or times[0] < 0:
            raise SocsimError("a path's times must be >= 0 and increase")

    @property
    def end_s(self) -> float:
        """The last point's time: the node stays there after it."""
        return self.points[-1][0]

    def position(self, times_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) in metres at each time."""
        t, x, y = (np.array(c) for c in zip(*self.points, strict=True))
        return np.interp(times_s, t, x), np.interp(times_s, t, y)


def random_waypoint(
    rng: np.random.Generator,
    area_m: tuple[float, float],
    speed_mps: tuple[float, float],
    pause_s: tuple[float, float],
    until_s: float,
    start_m: tuple[float, float] | None = None,
) -> Path:
    """A random-waypoint path (Johnson and Maltz, 1996) in ``[0, w] x [0, h]``.

    From its position the node picks a destination uniformly in the area and a speed
    uniformly in ``speed_mps``, walks there in a straight line, pauses for a time uniform
    in ``pause_s``, and repeats until ``until_s`` (the last leg is cut there). The draws
    come from ``rng`` in a fixed order (destination x, y, speed, pause), so a seed gives
    one path.
    """
    width, height = area_m
    if start_m is None:
        x, y = float(rng.uniform(0, width)), float(rng.uniform(0, height))
    else:
        x, y = start_m
    t = 0.0
    points = [(t, x, y)]
    while t < until_s:
        nx, ny = float(rng.uniform(0, width)), float(rng.uniform(0, height))
        speed = float(rng.uniform(*speed_mps))
        pause = float(rng.uniform(*pause_s))
        arrive = t + math.hypot(nx - x, ny - y) / speed
        if arrive >= until_s:  # cut the leg at until_s
            f = (until_s - t) / (arrive - t)
            points.append((until_s, x + f * (nx - x), y + f * (ny - y)))
            break
        if arrive > t:
            points.append((arrive, nx, ny))
        x, y, t = nx, ny, arrive
        if pause > 0 and t + pause < until_s:
            t += pause
            points.append((t, x, y))
        elif pause > 0:
            points.append((until_s, x, y))
            break
    return Path(tuple(points))


def path_seed(seed: int, link: str) -> np.random.Generator:
    """The random-waypoint stream of ``link``'s moving end: one per (scenario seed, link),
    the same in every replicate (the walk is part of the scenario, like a trace file)."""
    key = int.from_bytes(hashlib.sha256(link.encode()).digest()[:8], "little")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_MOBILITY_STREAMS, key)))


@dataclass(frozen=True)
class AccessPoint:
    name: str
    x_m: float
    y_m: float


@dataclass(frozen=True)
class Handover:
    """The serving access point changes at ``time_s``; the link carries nothing for
    ``interruption_s``."""

    time_s: float
    from_ap: str
    to_ap: str
    interruption_s: float


@dataclass(frozen=True)
class Mobility:
    """A mobile link's inputs.

    Attributes
    ----------
    path : Path
        The moving end's positions.
    access_points : tuple of AccessPoint
        Where the link's other side can be reached from; the first listed wins ties.
    table : RateTable
    path_loss : PathLoss
    tx_power_dbm : float
        Transmit power (both directions: assumption).
    efficiency : float
        Throughput over PHY rate (MAC overhead), in (0, 1].
    step_s : float
        Sampling step of the rate and of handover decisions.
    hysteresis_db : float
        Another access point must be this much stronger to take over.
    interruption_s : float
        A handover's interruption.
    in_flight : str
        ``resend`` or ``drop`` (:data:`IN_FLIGHT`).
    """

    path: Path
    access_points: tuple[AccessPoint, ...]
    table: RateTable = field(default_factory=lambda: RATE_TABLES["vht20_1ss"])
    path_loss: PathLoss = field(default_factory=PathLoss)
    tx_power_dbm: float = 20.0
    efficiency: float = 1.0
    step_s: float = 0.1
    hysteresis_db: float = 3.0
    interruption_s: float = 0.0
    in_flight: str = "resend"

    def __post_init__(self) -> None:
        if not self.access_points:
            raise SocsimError("mobility needs at least one access point")
        if not (0 < self.efficiency <= 1):
            raise SocsimError("mobility: efficiency must be in (0, 1]")
        if not (self.step_s > 0 and self.hysteresis_db >= 0 and self.interruption_s >= 0):
            raise SocsimError("mobility: step > 0, hysteresis and interruption >= 0 expected")
        if self.in_flight not in IN_FLIGHT:
            raise SocsimError(f"mobility: in_flight must be one of {IN_FLIGHT}")

    def sample_times(self) -> np.ndarray:
        """``k * step_s`` for k = 0 .. the first sample at or after the path's end."""
        count = math.ceil(self.path.end_s / self.step_s - 1e-9) + 1
        return np.arange(count) * self.step_s

    def rx_dbm(self, times_s: np.ndarray) -> np.ndarray:
        """Received power (dBm) from each access point at each time: (times, aps)."""
        x, y = self.path.position(times_s)
        ax = np.array([ap.x_m for ap in self.access_points])
        ay = np.array([ap.y_m for ap in self.access_points])
        distance_m = np.hypot(x[:, None] - ax[None, :], y[:, None] - ay[None, :])
        return self.tx_power_dbm - self.path_loss.loss_db(distance_m)

    def rate_bps(self, rx_dbm: np.ndarray) -> np.ndarray:
        """Throughput (bit/s) at each received power: table rate x efficiency."""
        return self.table.rate_bps(rx_dbm) * self.efficiency


@dataclass(frozen=True)
class Coverage:
    """What a mobile link's capacity is over time.

    Attributes
    ----------
    steps : tuple of (time_s, bandwidth_bps)
        The serving access point's throughput (equal neighbours merged).
    handovers : tuple of Handover
    serving : tuple of (time_s, access point)
        The serving access point from each time on.
    in_flight : str
        What a handover does to a transfer under way (:data:`IN_FLIGHT`).
    max_bps : float
        The rate table's maximum times the efficiency: the trace never exceeds it.
    """

    steps: tuple[tuple[float, float], ...]
    handovers: tuple[Handover, ...]
    serving: tuple[tuple[float, str], ...]
    in_flight: str = "resend"
    max_bps: float = math.inf

    @property
    def interruptions(self) -> tuple[tuple[float, float], ...]:
        """``[start_s, end_s]`` of each handover with an interruption (outages)."""
        return tuple(
            (h.time_s, h.time_s + h.interruption_s) for h in self.handovers if h.interruption_s
        )


def coverage(mobility: Mobility) -> Coverage:
    """Sample the path, choose the serving access point, and give the capacity trace.

    The serving access point at t = 0 is the strongest (the first listed on ties). At each
    later sample outside an interruption, the strongest other access point takes over when
    its received power exceeds the serving one's by more than ``hysteresis_db``, or when
    the serving one is out of range (rate 0) and it is not. The rate at a sample holds
    until the next sample.
    """
    times = mobility.sample_times()
    rx = mobility.rx_dbm(times)
    rate = mobility.rate_bps(rx)
    names = [ap.name for ap in mobility.access_points]
    serving = int(np.argmax(rx[0]))
    busy_until = -math.inf
    handovers: list[Handover] = []
    changes = [(0.0, names[serving])]
    steps: list[tuple[float, float]] = []
    best = np.argmax(rx, axis=1)
    for k, t in enumerate(times.tolist()):
        b = int(best[k])
        if b != serving and t >= busy_until:
            stronger = rx[k, b] > rx[k, serving] + mobility.hysteresis_db
            if stronger or (rate[k, serving] == 0 and rate[k, b] > 0):
                handovers.append(Handover(t, names[serving], names[b], mobility.interruption_s))
                changes.append((t, names[b]))
                serving = b
                busy_until = t + mobility.interruption_s
        bps = float(rate[k, serving])
        if not steps or steps[-1][1] != bps:
            steps.append((t, bps))
    cap = mobility.table.max_bps * mobility.efficiency
    return Coverage(tuple(steps), tuple(handovers), tuple(changes), mobility.in_flight, cap)
