"""Links as they behave: bandwidth traces crossed mid-transfer, fair sharing, outages;
random bandwidth, latency jitter and packet loss drawn from seeded streams."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from conftest import two_node_doc

from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.network.impairments import direction_seed, retransmissions
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12


def uploads(result):
    hops = result.transfers[result.transfers["src_node"] == "phone"]
    return hops.sort_values("request_id")[["start_s", "end_s"]].to_numpy().ravel()


def test_a_transfer_follows_a_bandwidth_change_mid_way():
    # 8 Mbit at 8 Mbit/s for 0.5 s (4 Mbit), then 16 Mbit/s for the other 4 Mbit: 0.25 s
    doc = two_node_doc({"bandwidth_trace_mbps": [[0, 8], [0.5, 16]]}, [0])
    assert uploads(simulate(parse_scenario(doc))) == pytest.approx([0, 0.75], rel=EXACT)


def test_a_trace_file_is_read_relative_to_the_scenario(tmp_path):
    (tmp_path / "trace.csv").write_text("time_s,bandwidth_mbps\n0,8\n0.5,16\n")
    doc = two_node_doc({"bandwidth_trace_file": "trace.csv"}, [0])
    result = simulate(parse_scenario(doc, base_dir=tmp_path))
    assert uploads(result) == pytest.approx([0, 0.75], rel=EXACT)
    (tmp_path / "bad.csv").write_text("time_s,bandwidth_mbps\n0,8\n0.5,fast\n")
    doc = two_node_doc({"bandwidth_trace_file": "bad.csv"}, [0])
    with pytest.raises(ScenarioError, match=r"bad\.csv:3: expected 'time_s,bandwidth_mbps'"):
        parse_scenario(doc, base_dir=tmp_path)


def test_fifo_serialises_and_fair_shares():
    fifo = uploads(simulate(parse_scenario(two_node_doc({}, [0, 0]))))
    assert fifo == pytest.approx([0, 1.0, 1.0, 2.0], rel=EXACT)
    fair = uploads(simulate(parse_scenario(two_node_doc({"sharing": "fair"}, [0, 0]))))
    assert fair == pytest.approx([0, 2.0, 0, 2.0], rel=EXACT)  # 4 Mbit/s each


def test_fair_sharing_with_a_late_second_flow():
    # flow 1 alone for 0.5 s (4 Mbit), then both at 4 Mbit/s: flow 1 ends at 1.5 s; flow 2
    # has 4 Mbit left then and finishes alone at 8 Mbit/s at 2.0 s
    fair = uploads(simulate(parse_scenario(two_node_doc({"sharing": "fair"}, [0, 500]))))
    assert fair == pytest.approx([0, 1.5, 0.5, 2.0], rel=EXACT)


def test_an_outage_pauses_transfers_and_nothing_completes_during_it():
    doc = two_node_doc({"outages_s": [[0.25, 1.25]]}, [0, 500])
    result = simulate(parse_scenario(doc))
    # request 0: 2 Mbit before the outage, 6 Mbit after it: ends at 2.0 s; request 1 waits
    assert uploads(result) == pytest.approx([0, 2.0, 2.0, 3.0], rel=EXACT)
    for end in uploads(result)[1::2]:
        assert not (0.25 < end < 1.25)


def test_an_outage_on_a_fair_link_and_the_return_direction():
    doc = two_node_doc({"sharing": "fair", "outages_s": [[0.5, 1.0]]}, [0])
    result = simulate(parse_scenario(doc))
    assert uploads(result) == pytest.approx([0, 1.5], rel=EXACT)
    assert result.requests["latency_s"].iloc[0] == pytest.approx(1.5, rel=EXACT)


def test_trace_and_outage_validation():
    bad = two_node_doc({"bandwidth_trace_mbps": [[0, 8], [1, 0]]}, [0])
    with pytest.raises(ScenarioError, match="must end with a bandwidth > 0"):
        parse_scenario(bad)
    bad = two_node_doc({"outages_s": [[2, 1]]}, [0])
    with pytest.raises(ScenarioError, match="start < end"):
        parse_scenario(bad)
    both = two_node_doc({"bandwidth_trace_mbps": [[0, 8]]}, [0])
    both["links"]["up"]["bandwidth_trace_file"] = "x.csv"
    with pytest.raises(ScenarioError):
        parse_scenario(copy.deepcopy(both))


def test_radio_power_returns_to_receive_only_after_an_upload_crossed_a_bandwidth_step():
    # regression: rates reach radios as deltas; float residue of a step (1.67 -> 69.4
    # Mbit/s) once left the radio "sending" while it only received the response
    doc = two_node_doc(
        {
            "bandwidth_trace_mbps": [[0, 1.6697976958974525], [0.0078125, 69.38256758253179]],
            "reverse_bandwidth_mbps": 1.0,
            "radio": {"tx_w": 1.0, "rx_w": 1.0},
        },
        [0],
        input_bytes=1632,
    )
    doc["models"]["m"]["ops"][0]["output_elems"] = 1
    states = simulate(parse_scenario(doc)).radio_states
    assert (states["power_w"] <= 1.0).all()  # never tx + rx: the two never overlap here
    assert states.iloc[-1]["state"] == "connected"  # the response being received


def test_an_empty_transfer_waits_for_the_link_to_come_back():
    # regression: a 0-byte flow used to complete at once, inside the outage
    doc = two_node_doc({"outages_s": [[0, 0.5]]}, [0], input_bytes=0)
    assert uploads(simulate(parse_scenario(doc))) == pytest.approx([0.5, 0.5], rel=EXACT)


# -- stochastic links: random bandwidth, jitter, loss -------------------------------------
def direction_rngs(seed: int, link: str, src: str, replicate: int = 0):
    """The (capacity, jitter, loss) Generators the engine gives that link direction."""
    streams = direction_seed(seed, replicate, link, src).spawn(3)
    return tuple(np.random.default_rng(s) for s in streams)


def with_response(doc: dict) -> dict:
    doc["models"]["m"]["ops"][0]["output_elems"] = 1  # 4 bytes come back to the phone
    return doc


def test_a_deterministic_direction_of_a_stochastic_link_is_unchanged_bit_for_bit():
    base = with_response(two_node_doc({"latency_ms": 20}, [0, 300, 600]))
    plain = simulate(parse_scenario(base))
    # loss_rate 0 is no impairment at all: every table is identical
    zero = simulate(
        parse_scenario(
            with_response(two_node_doc({"latency_ms": 20, "loss_rate": 0}, [0, 300, 600]))
        )
    )
    for name, table in plain.tables().items():
        pd.testing.assert_frame_equal(table, zero.tables()[name], check_exact=True)
    # a random return direction gives the upload direction an impairment state with no
    # jitter, loss or distribution: its rows stay bit-for-bit the same
    random_back = {"dist": "lognormal", "mean_mbps": 8000, "cv": 0.5, "hold_ms": 10}
    doc = two_node_doc(
        {"latency_ms": 20, "reverse_bandwidth_distribution": random_back}, [0, 300, 600]
    )
    impaired = simulate(parse_scenario(with_response(doc)))
    up = [
        t[t["src_node"] == "phone"].reset_index(drop=True)
        for t in (plain.transfers, impaired.transfers)
    ]
    pd.testing.assert_frame_equal(*up, check_exact=True)


def test_jitter_is_drawn_from_the_directions_generator():
    link = {"latency_ms": 20, "jitter": {"dist": "exponential", "mean_ms": 10}}
    doc = with_response(two_node_doc(link, [0, 2000, 4000]))
    doc["seed"] = 5
    hops = simulate(parse_scenario(doc)).transfers
    for src in ("phone", "cloud"):
        _, jitter_rng, _ = direction_rngs(5, "up", src)
        rows = hops[hops["src_node"] == src].sort_values("end_s")
        expected = [0.02 + jitter_rng.exponential(0.01) for _ in range(len(rows))]
        assert list(rows["arrive_s"]) == [
            e + d for e, d in zip(rows["end_s"], expected, strict=True)
        ]


def test_lost_packets_lengthen_serialisation_and_add_round_trips():
    link = {"latency_ms": 20, "loss_rate": 0.05, "radio": {"tx_w": 2.0, "rx_w": 1.0}}
    times = [0, 3000, 6000, 9000]
    doc = two_node_doc(link, times)  # 1 MB at 8 Mbit/s: 667 packets of 1500 B, 1 s lossless
    doc["seed"] = 3
    result = simulate(parse_scenario(doc))
    _, _, loss_rng = direction_rngs(3, "up", "phone")
    rows = result.transfers[result.transfers["src_node"] == "phone"].sort_values("request_id")
    for row in rows.itertuples():
        extra, rounds = retransmissions(loss_rng, 667, 0.05)
        assert row.end_s - row.start_s == pytest.approx((667 + extra) / 667, rel=EXACT)
        assert row.arrive_s - row.end_s == pytest.approx(0.02 + (rounds - 1) * 0.04, rel=EXACT)
        assert row.bytes == 1_000_000  # the payload; the extra bits are the radio's
    lossless = simulate(parse_scenario(two_node_doc({**link, "loss_rate": 0}, times)))
    radio = result.energy["component"] == "radio:up"
    assert result.energy[radio]["energy_j"].sum() > lossless.energy[radio]["energy_j"].sum()


def test_a_transfer_integrates_a_random_capacity_exactly():
    random_bw = {"dist": "lognormal", "mean_mbps": 8, "cv": 0.5, "hold_ms": 100}
    doc = two_node_doc({"bandwidth_distribution": random_bw, "outages_s": [[0.25, 0.45]]}, [0])
    doc["seed"] = 11
    start, end = uploads(simulate(parse_scenario(doc)))
    capacity_rng, _, _ = direction_rngs(11, "up", "phone")
    sigma2 = math.log(1.25)
    draws = capacity_rng.lognormal(math.log(8e6) - sigma2 / 2, sigma2**0.5, 256)
    # walk the steps by hand: draw k on [k·0.1, (k+1)·0.1), nothing during the outage
    bounds = sorted({k * 0.1 for k in range(60)} | {0.25, 0.45})
    left = 8e6
    for a, b in itertools.pairwise(bounds):
        rate = 0.0 if 0.25 <= a < 0.45 else draws[int(a * 10 + 1e-9)]
        if rate * (b - a) >= left:
            expected = a + left / rate
            break
        left -= rate * (b - a)
    assert expected > 0.5  # the transfer crossed the outage and several draws
    assert start == 0 and end == pytest.approx(expected, rel=1e-9)
    assert not 0.25 < end < 0.45


def test_random_links_depend_on_seed_and_replicate_and_not_on_other_links():
    link = {"latency_ms": 20, "jitter": {"dist": "uniform", "max_ms": 40}, "loss_rate": 0.02}
    doc = two_node_doc(link, [0, 1500, 3000])
    doc["workload"][0]["arrival"] = {"process": "poisson", "rate_hz": 1}
    doc["workload"][0]["count"] = 3

    def arrivals_and_uploads(d, replicate=0):
        result = simulate(parse_scenario(d), replicate=replicate)
        up = result.transfers[result.transfers["src_node"] == "phone"]
        return result.requests["arrival_s"].tolist(), up[["end_s", "arrive_s"]].to_numpy()

    arrivals, base = arrivals_and_uploads(doc)
    assert np.array_equal(base, arrivals_and_uploads(copy.deepcopy(doc))[1])
    other_seed = dict(copy.deepcopy(doc), seed=1)
    assert not np.array_equal(base, arrivals_and_uploads(other_seed)[1])
    assert not np.array_equal(base, arrivals_and_uploads(doc, replicate=1)[1])
    # the app's arrival stream is the same as on a deterministic link
    plain = two_node_doc({"latency_ms": 20}, [0])
    plain["workload"] = doc["workload"]
    assert arrivals_and_uploads(plain)[0] == arrivals
    # another random link (unused by this app) changes no stream of this one
    more = copy.deepcopy(doc)
    more["nodes"]["edge"] = copy.deepcopy(more["nodes"]["cloud"])
    more["links"]["side"] = {
        "ends": ["phone", "edge"],
        "latency_ms": 5,
        "bandwidth_mbps": 50,
        **{k: v for k, v in link.items() if k != "latency_ms"},
    }
    got_arrivals, got = arrivals_and_uploads(more)
    assert got_arrivals == arrivals and np.array_equal(got, base)


def test_stochastic_link_keys_are_validated():
    bad = two_node_doc(
        {
            "bandwidth_distribution": {"dist": "lognorm", "mean_mbps": 8, "cv": 1, "hold_ms": 1},
            "jitter": {"dist": "uniform", "mean_ms": 3},
            "loss_rate": 0.7,
        },
        [0],
    )
    with pytest.raises(ScenarioError) as info:
        parse_scenario(bad)
    text = str(info.value)
    assert "links.up.bandwidth_distribution.dist: unknown distribution 'lognorm'" in text
    assert "did you mean 'lognormal'" in text and "did you mean 'max_ms'" in text
    assert "links.up.loss_rate: expected a number >= 0 and <= 0.5, got 0.7" in text
    wide = {"dist": "uniform", "mean_mbps": 8, "cv": 0.7, "hold_ms": 100}
    with pytest.raises(ScenarioError, match=r"links\.up\.bandwidth_distribution: a uniform"):
        parse_scenario(two_node_doc({"bandwidth_distribution": wide}, [0]))
    both = {"dist": "normal", "mean_mbps": 8, "cv": 0.1, "hold_ms": 100}
    with pytest.raises(ScenarioError, match="bandwidth_trace or bandwidth_distribution"):
        parse_scenario(
            two_node_doc({"bandwidth_distribution": both, "bandwidth_trace_mbps": [[0, 8]]}, [0])
        )


def test_the_lossy_lte_example_gives_the_figures_of_links_md():
    lossy = simulate(load_scenario("scenarios/examples/alexnet_lossy_lte.yaml")).summary
    assert round(lossy["latency_p50_s"] * 1e3, 1) == 1010.2
    assert round(lossy["latency_p95_s"] * 1e3, 1) == 1081.4
    assert round(lossy["device_energy_per_inference_j"] * 1e3) == 3593
    doc = load_scenario("scenarios/examples/alexnet_phone_cloud.yaml").document
    doc["workload"][0]["count"] = 200
    constant = simulate(parse_scenario(doc)).summary
    assert round(constant["latency_p50_s"] * 1e3, 1) == 896.5
    assert round(constant["device_energy_per_inference_j"] * 1e3) == 3571  # tail to the response
