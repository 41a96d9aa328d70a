"""Mobility, pure: path loss and rate tables at hand-computed distances, handover times,
random-waypoint paths; properties (rate non-increasing with distance, never above the
table's maximum, deterministic per seed)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import SocsimError
from simulator.network.mobility import (
    RATE_TABLES,
    AccessPoint,
    Mobility,
    Path,
    PathLoss,
    RateTable,
    coverage,
    path_seed,
    random_waypoint,
)

VHT20 = RATE_TABLES["vht20_1ss"]
TGN_D = PathLoss()  # 46.7 dB at 1 m, free space to 10 m, then exponent 3.5


def walk(x0: float = 0.0, x1: float = 60.0, speed_mps: float = 1.0) -> Path:
    """A straight walk along y = 0 from x0 to x1."""
    return Path(((0.0, x0, 0.0), ((x1 - x0) / speed_mps, x1, 0.0)))


TWO_APS = (AccessPoint("ap1", 0.0, 0.0), AccessPoint("ap2", 60.0, 0.0))


def test_path_loss_by_hand():
    # free-space slope to the 10 m breakpoint: 46.7 + 20 log10(10) = 66.7 dB;
    # at 100 m: 66.7 + 35 log10(100 / 10) = 101.7 dB; below 1 m: the 1 m loss
    loss = TGN_D.loss_db(np.array([0.5, 1.0, 10.0, 100.0]))
    assert loss == pytest.approx([46.7, 46.7, 66.7, 101.7], abs=1e-12)
    single = PathLoss(40.0, 3.0, 1.0, None)
    assert single.loss_db(np.array([10.0]))[0] == pytest.approx(70.0, abs=1e-12)


@pytest.mark.parametrize(
    ("distance_m", "mbps"),
    [
        # 20 dBm - 66.7 dB = -46.7 dBm >= -59: MCS 8, 78 Mbit/s
        (10.0, 78.0),
        # 66.7 + 35 log10(3) = 83.40 dB -> -63.40 dBm in [-64, -59): MCS 7, 65 Mbit/s
        (30.0, 65.0),
        # 66.7 + 35 log10(5) = 91.16 dB -> -71.16 dBm in [-74, -70): MCS 3, 26 Mbit/s
        (50.0, 26.0),
        # 101.7 dB -> -81.7 dBm in [-82, -79): MCS 0, 6.5 Mbit/s
        (100.0, 6.5),
        # 66.7 + 35 log10(12) = 104.47 dB -> -84.47 dBm < -82: out of range
        (120.0, 0.0),
    ],
)
def test_rate_at_a_known_distance_from_the_table(distance_m, mbps):
    mobility = Mobility(Path(((0.0, distance_m, 0.0),)), (AccessPoint("ap", 0.0, 0.0),))
    rx = mobility.rx_dbm(np.array([0.0]))
    assert mobility.rate_bps(rx)[0, 0] == mbps * 1e6


def test_the_rate_table_is_a_step_at_each_row():
    assert VHT20.rate_bps(np.array([-82.0, -82.0001, -59.0, 0.0])).tolist() == [
        6.5e6,
        0.0,
        78e6,
        78e6,
    ]
    with pytest.raises(SocsimError, match="must both increase"):
        RateTable("bad", ((-80, 10e6), (-70, 5e6)))


def test_handover_at_the_hand_computed_time():
    # ap2 takes over when 35 log10(d1 / d2) > 3 dB (both past the breakpoint):
    # x / (60 - x) > 10^(3/35) = 1.21807 -> x > 32.949 m, the first 0.1 s sample is 33.0 s
    mobility = Mobility(walk(), TWO_APS, hysteresis_db=3.0, interruption_s=0.2)
    cover = coverage(mobility)
    assert [(h.time_s, h.from_ap, h.to_ap) for h in cover.handovers] == [(33.0, "ap1", "ap2")]
    assert cover.interruptions == ((33.0, 33.2),)
    assert cover.serving == ((0.0, "ap1"), (33.0, "ap2"))
    rates = dict(cover.steps)
    # just before: 33 m from ap1 -> -64.80 dBm: MCS 6 (58.5); after: 27 m from ap2 ->
    # 66.7 + 35 log10(2.7) = 81.80 dB -> -61.80 dBm: MCS 7 (65)
    assert cover.steps[[t for t, _ in cover.steps].index(33.0) - 1][1] == 58.5e6
    assert rates[33.0] == 65e6
    # without hysteresis it happens as soon as ap2 is strictly stronger: x > 30 -> 30.1 s
    plain = coverage(Mobility(walk(), TWO_APS, hysteresis_db=0.0))
    assert [h.time_s for h in plain.handovers] == [pytest.approx(30.1, abs=1e-12)]


def test_no_handover_back_inside_the_interruption():
    # a walk that turns back at once: the return decision waits for the interruption
    path = Path(((0.0, 29.0, 0.0), (2.0, 31.0, 0.0), (4.0, 29.0, 0.0)))
    cover = coverage(Mobility(path, TWO_APS, hysteresis_db=0.0, interruption_s=2.5))
    times = [h.time_s for h in cover.handovers]
    # x > 30 first at 1.1 s; x < 30 again from 3.1 s, but no decision is taken before the
    # interruption ends at 1.1 + 2.5 = 3.6 s (x = 29.4): back to ap1 then
    assert times == [pytest.approx(1.1, abs=1e-12), pytest.approx(3.6, abs=1e-12)]
    assert all(b - a >= 2.5 for a, b in itertools.pairwise(times))


def test_random_waypoint_is_seeded_and_stays_in_the_area():
    a = random_waypoint(path_seed(7, "wifi"), (100.0, 50.0), (0.5, 1.5), (0.0, 2.0), 600.0)
    b = random_waypoint(path_seed(7, "wifi"), (100.0, 50.0), (0.5, 1.5), (0.0, 2.0), 600.0)
    c = random_waypoint(path_seed(8, "wifi"), (100.0, 50.0), (0.5, 1.5), (0.0, 2.0), 600.0)
    assert a == b and a != c
    assert a.end_s == 600.0
    pts = np.array(a.points)
    assert (pts[:, 1] >= 0).all() and (pts[:, 1] <= 100).all()
    assert (pts[:, 2] >= 0).all() and (pts[:, 2] <= 50).all()
    # every leg's speed is within [0.5, 1.5] m/s (or 0: a pause)
    dt = np.diff(pts[:, 0])
    speed = np.hypot(np.diff(pts[:, 1]), np.diff(pts[:, 2])) / dt
    assert ((speed == 0) | ((speed >= 0.5 - 1e-9) & (speed <= 1.5 + 1e-9))).all()


_DISTANCES = st.lists(st.floats(0.0, 500.0), min_size=2, max_size=30)


@settings(max_examples=60, deadline=None)
@given(
    _DISTANCES,
    st.sampled_from(sorted(RATE_TABLES)),
    st.floats(2.0, 5.0),
    st.floats(-10.0, 30.0),
)
def test_rate_is_non_increasing_with_distance(distances, table, exponent, tx_dbm):
    mobility = Mobility(
        Path(((0.0, 0.0, 0.0),)),
        (AccessPoint("ap", 0.0, 0.0),),
        RATE_TABLES[table],
        PathLoss(46.7, exponent),
        tx_dbm,
    )
    d = np.sort(np.array(distances))
    rate = mobility.rate_bps(tx_dbm - mobility.path_loss.loss_db(d))
    assert (np.diff(rate) <= 0).all()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.3, 1.0),
    st.sampled_from(sorted(RATE_TABLES)),
    st.floats(0.0, 6.0),
)
def test_the_link_never_exceeds_its_tables_maximum_and_is_deterministic(
    seed, efficiency, table, hysteresis_db
):
    path = random_waypoint(path_seed(seed, "l"), (200.0, 80.0), (0.5, 3.0), (0.0, 5.0), 120.0)
    aps = (AccessPoint("a", 20.0, 40.0), AccessPoint("b", 100.0, 40.0), AccessPoint("c", 180.0, 0))
    mobility = Mobility(
        path,
        aps,
        RATE_TABLES[table],
        efficiency=efficiency,
        step_s=0.5,
        hysteresis_db=hysteresis_db,
    )
    cover = coverage(mobility)
    cap = RATE_TABLES[table].max_bps * efficiency
    assert cover.max_bps == cap
    assert all(0 <= bps <= cap for _, bps in cover.steps)
    again = random_waypoint(path_seed(seed, "l"), (200.0, 80.0), (0.5, 3.0), (0.0, 5.0), 120.0)
    assert coverage(Mobility(path=again, **_fields(mobility, "path"))) == cover
    # the serving access point is always the one a handover named last
    for handover, (t, ap) in zip(cover.handovers, cover.serving[1:], strict=True):
        assert (handover.time_s, handover.to_ap) == (t, ap)
    assert math.isfinite(cover.steps[-1][0])


def _fields(mobility: Mobility, *leave: str) -> dict:
    return {k: getattr(mobility, k) for k in mobility.__dataclass_fields__ if k not in leave}
