"""A shared medium's airtime, against closed forms: n equal stations get 1/n each; the
802.11 performance anomaly (equal throughput) against equal airtime; uplink and
downlink on one airtime; a work-conserving medium ends at the sum of the airtimes."""

from __future__ import annotations

import math

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine.medium import SharedMedium
from simulator.network.medium import medium_rates

MBIT = 1e6


def run_flows(fairness: str, flows: list[tuple[str, float, float, float]]) -> dict:
    """Submit ``(port, rate_bps, bits, at_s)`` flows; return port -> finish times (s)."""
    env = simpy.Environment()
    medium = SharedMedium(env, "wlan", fairness)
    ports: dict = {}
    done: dict[str, list[float]] = {}

    def finished(name, start_s, end_s, delay_s):
        done.setdefault(name, []).append(end_s + delay_s)

    for name, rate, bits, at_s in flows:
        if name not in ports:
            ports[name] = medium.port(name, rate, None, 0.0)

        def submit(_event, port=ports[name], bits=bits, name=name):
            port.submit(bits, None, finished, name)

        env.timeout(at_s).callbacks.append(submit)
    env.run()
    return done


@pytest.mark.parametrize("fairness", ["throughput", "airtime"])
@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_n_equal_stations_get_one_nth(fairness, n):
    # n stations at 8 Mbit/s each send 8 Mbit at t = 0: each gets 8/n Mbit/s, all end at n s
    done = run_flows(fairness, [(f"s{i}", 8 * MBIT, 8 * MBIT, 0.0) for i in range(n)])
    assert sorted(done) == sorted(f"s{i}" for i in range(n))
    for times in done.values():
        assert times == [pytest.approx(float(n), rel=1e-12)]


def test_performance_anomaly_throughput_fairness():
    # Heusse et al. 2003: with equal throughput a 2 Mbit/s station drags an 8 Mbit/s one
    # down to x = 1 / (1/8 + 1/2) = 1.6 Mbit/s; 8 Mbit each: both end at 8 / 1.6 = 5 s
    assert medium_rates([8 * MBIT, 2 * MBIT], "throughput") == pytest.approx([1.6 * MBIT] * 2)
    done = run_flows(
        "throughput", [("fast", 8 * MBIT, 8 * MBIT, 0), ("slow", 2 * MBIT, 8 * MBIT, 0)]
    )
    assert done["fast"] == [pytest.approx(5.0)]
    assert done["slow"] == [pytest.approx(5.0)]


def test_airtime_fairness_frees_the_fast_station():
    # equal airtime: fast gets 4, slow 1 Mbit/s; fast ends at 8/4 = 2 s, slow has sent
    # 2 Mbit by then and sends its last 6 Mbit alone at 2 Mbit/s: ends at 2 + 3 = 5 s
    assert medium_rates([8 * MBIT, 2 * MBIT], "airtime") == pytest.approx([4 * MBIT, 1 * MBIT])
    done = run_flows("airtime", [("fast", 8 * MBIT, 8 * MBIT, 0), ("slow", 2 * MBIT, 8 * MBIT, 0)])
    assert done["fast"] == [pytest.approx(2.0)]
    assert done["slow"] == [pytest.approx(5.0)]


def test_uplink_and_downlink_share_one_airtime():
    # a station's uplink and the access point's downlink to another station contend: at
    # 10 Mbit/s each, 10 Mbit each way takes 2 s, not 1 s as on a full-duplex link
    env = simpy.Environment()
    medium = SharedMedium(env, "ap", "throughput")
    up = medium.port("wlan/a:a->ap", 10 * MBIT, None, 0.0)
    down = medium.port("wlan/b:ap->b", 10 * MBIT, None, 0.0)
    ends = []
    for port in (up, down):
        port.submit(10 * MBIT, None, lambda p, s, e, d: ends.append(e), None)
    env.run()
    assert ends == [pytest.approx(2.0), pytest.approx(2.0)]


def test_a_station_queue_is_fifo_and_late_arrivals_join():
    # one port queues its flows; a second station arriving at 1 s takes half from then on
    done = run_flows(
        "throughput",
        [
            ("a", 8 * MBIT, 8 * MBIT, 0.0),
            ("a", 8 * MBIT, 8 * MBIT, 0.0),
            ("b", 8 * MBIT, 4 * MBIT, 1.0),
        ],
    )
    # a's first flow: 1 s alone (8 Mbit at 8) -> done at 1 s; then a's second and b share
    # 4 + 4 Mbit/s: b's 4 Mbit ends at 2 s, a's second has 4 Mbit left, alone: 2.5 s
    assert done["a"] == [pytest.approx(1.0), pytest.approx(2.5)]
    assert done["b"] == [pytest.approx(2.0)]


def test_cancel_returns_bits_sent_and_frees_the_airtime():
    env = simpy.Environment()
    medium = SharedMedium(env, "ap", "throughput")
    a = medium.port("a", 8 * MBIT, None, 0.0)
    b = medium.port("b", 8 * MBIT, None, 0.0)
    ends = []
    flow = a.submit(8 * MBIT, None, lambda *args: ends.append("a"), None)
    b.submit(8 * MBIT, None, lambda p, s, e, d: ends.append(e), None)
    sent = []
    env.timeout(1.0).callbacks.append(lambda _e: sent.append(a.cancel(flow)))
    env.run()
    assert sent == [pytest.approx(4 * MBIT)]  # 1 s at half of 8 Mbit/s
    assert ends == [pytest.approx(1.5)]  # b: 4 Mbit in the first second, 4 more alone


@settings(max_examples=60, deadline=None)
@given(
    fairness=st.sampled_from(["throughput", "airtime"]),
    flows=st.lists(
        st.tuples(st.floats(0.5, 100.0), st.floats(0.01, 50.0)), min_size=1, max_size=12
    ),
)
def test_work_conserving_medium_ends_at_the_sum_of_airtimes(fairness, flows):
    # every flow starts at 0 on its own station: the medium never idles, so the last one
    # ends when the airtime each needs alone, sum(bits_i / rate_i), has been spent
    done = run_flows(
        fairness, [(f"s{i}", r * MBIT, b * MBIT, 0.0) for i, (r, b) in enumerate(flows)]
    )
    last = max(t for times in done.values() for t in times)
    assert last == pytest.approx(sum(b / r for r, b in flows), rel=1e-9)
    assert len(done) == len(flows)


@given(rates=st.lists(st.floats(0.1, 1000.0), min_size=1, max_size=20))
def test_shares_fill_the_airtime_exactly(rates):
    for fairness in ("throughput", "airtime"):
        shares = medium_rates(rates, fairness)
        assert math.fsum(x / r for x, r in zip(shares, rates, strict=True)) == pytest.approx(1.0)
