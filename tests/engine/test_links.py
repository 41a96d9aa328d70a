"""Links as they behave: bandwidth traces crossed mid-transfer, fair sharing, outages."""

from __future__ import annotations

import copy

import pytest

from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.spec import parse_scenario

EXACT = 1e-12


def two_node_doc(link: dict, times_ms: list[float], input_bytes: int = 1_000_000) -> dict:
    """The cloud runs one instant op on a 1 MB input sent from the phone."""
    return {
        "name": "links",
        "nodes": {
            "phone": {
                "role": "device",
                "units": {"cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}}},
            },
            "cloud": {
                "role": "cloud",
                "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 1}}},
            },
        },
        "links": {
            "up": {
                "ends": ["phone", "cloud"],
                "latency_ms": 0,
                "bandwidth_mbps": 8,
                "reverse_bandwidth_mbps": 8000,
                **link,
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "custom",
                        "flops": 0,
                        "input_elems": input_bytes // 4,
                        "output_elems": 0,
                    }
                ]
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": times_ms},
            }
        ],
        "placement": {"policy": "offload", "node": "cloud"},
    }


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
