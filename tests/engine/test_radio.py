"""Radio state machines against closed-form energies (Huang et al. MobiSys 2012 LTE model)."""

from __future__ import annotations

import copy

import pytest
from conftest import phone_cloud_nodes

from simulator.engine import plan_apps, simulate
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXACT = 1e-12
LTE = {
    "model": "rrc",
    "promotion_ms": 260,
    "promotion_w": 1.21,
    "tail_ms": 11576,
    "tail_w": 1.06,
    "base_w": 1.28804,
    "alpha_up_mw_per_mbps": 438.39,
    "alpha_down_mw_per_mbps": 51.97,
    "idle_w": 0.02,
}
UP_BPS, DOWN_BPS, LATENCY_S = 5.85e6, 13e6, 0.035


def upload_doc(times_ms: list[float], input_bytes: int = 1_000_000) -> dict:
    """A phone (no compute power) offloading a 1 ms op to a cloud over LTE."""
    return {
        "name": "lte_upload",
        "nodes": phone_cloud_nodes(),
        "links": {
            "lte": {
                "ends": ["phone", "cloud"],
                "latency_ms": 35,
                "bandwidth_mbps": 5.85,
                "reverse_bandwidth_mbps": 13,
                "radio": copy.deepcopy(LTE),
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "conv",
                        "flops": 1e9,
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


def radio_row(result):
    return result.energy.set_index("component").loc["radio:lte"]


def test_isolated_lte_upload_pays_promotion_transfer_and_one_tail():
    result = simulate(parse_scenario(upload_doc([0])))
    up_s = 8e6 / UP_BPS
    # promotion delays the upload; the (empty) output still makes the return trip
    upload_end = 0.26 + up_s
    response_at = upload_end + LATENCY_S + 1e-3  # the cloud sends the output back
    assert result.requests["latency_s"].iloc[0] == pytest.approx(response_at + LATENCY_S, rel=EXACT)
    states = result.radio_states.groupby("state")["energy_j"].sum()
    assert states["promotion"] == pytest.approx(0.26 * 1.21, rel=EXACT)
    transfer_w = 1.28804 + 438.39e-9 * UP_BPS
    assert states["connected"] == pytest.approx(transfer_w * up_s, rel=EXACT)
    # the tail starts after the upload; the response reaches the phone one latency after
    # the cloud sends it, inside the tail, and resets it then (not when the cloud sends)
    reached = response_at + LATENCY_S
    tail_s = (reached - upload_end) + 11.576
    assert states["tail"] == pytest.approx(tail_s * 1.06, rel=EXACT)
    # the window stays open until the tail ends: the battery pays it
    assert result.summary["window_end_s"] == pytest.approx(reached + 11.576, rel=EXACT)
    assert "idle" not in states  # idle only before the first arrival (outside the window)
    assert radio_row(result)["energy_j"] == pytest.approx(
        0.26 * 1.21 + transfer_w * up_s + tail_s * 1.06, rel=EXACT
    )


def test_two_uploads_inside_one_tail_pay_one_promotion_and_one_tail():
    up_s = 8e6 / UP_BPS
    round_trip = LATENCY_S + 1e-3 + LATENCY_S
    second = 5.0  # well inside the first request's 11.576 s tail
    result = simulate(parse_scenario(upload_doc([0, second * 1e3])))
    states = result.radio_states.groupby("state")["energy_j"].sum()
    assert states["promotion"] == pytest.approx(0.26 * 1.21, rel=EXACT)  # one promotion
    latencies = result.requests.sort_values("request_id")["latency_s"].to_numpy()
    assert latencies == pytest.approx([0.26 + up_s + round_trip, up_s + round_trip], rel=EXACT)
    # tail time: every gap between transfers, then one full 11.576 s after the last one
    last_transfer = second + up_s + LATENCY_S + 1e-3 + LATENCY_S  # response at the phone
    connected = 2 * up_s
    tail_s = last_transfer - 0.26 - connected + 11.576
    assert states["tail"] == pytest.approx(tail_s * 1.06, rel=EXACT)
    assert result.summary["window_end_s"] == pytest.approx(last_transfer + 11.576, rel=EXACT)


def test_uploads_further_apart_than_the_tail_pay_twice():
    result = simulate(parse_scenario(upload_doc([0, 20000])))
    states = result.radio_states.groupby("state")["energy_j"].sum()
    assert states["promotion"] == pytest.approx(2 * 0.26 * 1.21, rel=EXACT)
    gap = 2 * LATENCY_S + 1e-3  # upload end -> response at the phone, inside the tail
    assert states["tail"] == pytest.approx(2 * (gap + 11.576) * 1.06, rel=EXACT)
    assert states["idle"] > 0  # idle between the two tails


def test_estimate_includes_promotion_delay_and_isolated_tail():
    scenario = parse_scenario(upload_doc([0]))
    oracle = CostOracle(scenario.platform)
    predicted = estimate(plan_apps(scenario, oracle)["a"], oracle)
    result = simulate(scenario)
    assert predicted.latency_s == result.requests["latency_s"].iloc[0]
    up_s = 8e6 / UP_BPS
    transfer_w = 1.28804 + 438.39e-9 * UP_BPS
    # one promotion, the upload, the tail until the response resets it when it reaches
    # the phone (the upload propagates, the cloud's 1 ms, the response propagates), then
    # one full tail: the lone request's battery cost
    gap_s = 2 * LATENCY_S + 1e-3
    assert predicted.radio_energy_j == pytest.approx(
        0.26 * 1.21 + transfer_w * up_s + (gap_s + 11.576) * 1.06, rel=EXACT
    )
    assert predicted.radio_energy_j == pytest.approx(radio_row(result)["energy_j"], rel=EXACT)


def download_doc(response_bytes: int = 100_000, output_bytes: int = 0) -> dict:
    """The cloud is the source: it sends ``response_bytes`` to the phone, whose 1 ms op
    (1 MFLOP at 1 GFLOP/s) returns ``output_bytes`` over the same LTE link."""
    doc = upload_doc([0], input_bytes=response_bytes)
    doc["workload"][0]["source"] = "cloud"
    op = doc["models"]["m"]["ops"][0]
    op["flops"] = 1e6
    op["output_elems"] = output_bytes // 4
    doc["placement"] = {"policy": "offload", "node": "phone"}
    return doc


def test_download_rrc_timeline_starts_when_the_first_bytes_reach_the_phone():
    """100 kB from the cloud at t = 0 over LTE (35 ms, 13 Mbit/s down, 260 ms promotion).

    By hand: the first bytes reach the phone at 35 ms; the idle radio promotes over
    [35, 295] ms, then receives for 8e5 / 13e6 = 61.538 ms until 356.538 ms, when the
    tensor has arrived and the tail begins. The op runs 1 ms; its empty output goes back
    at 357.538 ms (in the tail: no promotion), restarting the tail for 11.576 s.
    """
    result = simulate(parse_scenario(download_doc()))
    down_s = 100_000 * 8 / DOWN_BPS
    connected_at = LATENCY_S + 0.26
    received_at = connected_at + down_s
    upload_at = received_at + 1e-3
    rows = result.radio_states
    timeline = list(zip(rows["state"], rows["start_s"], rows["end_s"], strict=True))
    expected = [
        ("idle", 0.0, LATENCY_S),
        ("promotion", LATENCY_S, connected_at),
        ("connected", connected_at, received_at),
        ("tail", received_at, upload_at),
        ("tail", upload_at, upload_at + 11.576),
    ]
    assert [state for state, _, _ in timeline] == [state for state, _, _ in expected]
    for (_, start, end), (_, start_hand, end_hand) in zip(timeline, expected, strict=True):
        assert (start, end) == pytest.approx((start_hand, end_hand), rel=EXACT, abs=1e-15)
    download = result.transfers.iloc[0]
    assert download["src_op"] == "<input>"
    # queued when its first bytes reach the phone; serialised once the radio is connected
    assert download["queued_s"] == pytest.approx(LATENCY_S, rel=EXACT)
    assert download["start_s"] == pytest.approx(connected_at, rel=EXACT)
    assert download["arrive_s"] == pytest.approx(received_at, rel=EXACT)
    # the latency is unchanged by where the propagation is paid: 35 + 260 + 61.5 + 1 + 35
    latency = received_at + 1e-3 + LATENCY_S
    assert result.requests["latency_s"].iloc[0] == pytest.approx(latency, rel=EXACT)
    assert result.summary["window_end_s"] == pytest.approx(upload_at + 11.576, rel=EXACT)
    connected_w = 1.28804 + 51.97e-9 * DOWN_BPS
    states = result.radio_states.groupby("state")["energy_j"].sum()
    assert states["connected"] == pytest.approx(connected_w * down_s, rel=EXACT)
    # the estimate follows the same timeline: same latency, same promotion, transfer, tail
    scenario = parse_scenario(download_doc())
    oracle = CostOracle(scenario.platform)
    predicted = estimate(plan_apps(scenario, oracle)["a"], oracle)
    assert predicted.latency_s == result.requests["latency_s"].iloc[0]
    idle_j = 0.02 * LATENCY_S  # the engine's window opens at the arrival: idle until 35 ms
    assert predicted.radio_energy_j + idle_j == pytest.approx(
        radio_row(result)["energy_j"], rel=EXACT
    )


def test_a_100_kb_response_resets_the_tail_when_it_reaches_the_phone():
    """The issue's case: a phone uploads 1 MB, the cloud answers 100 kB one latency after
    the upload; the response is at the phone 35 ms + 61.5 ms after the cloud sends, and
    the tail (hence the energy window) ends 11.576 s after that, not 35 ms earlier."""
    doc = upload_doc([0])
    doc["models"]["m"]["ops"][0]["output_elems"] = 100_000 // 4
    result = simulate(parse_scenario(doc))
    up_s = 8e6 / UP_BPS
    down_s = 100_000 * 8 / DOWN_BPS
    sent_at = 0.26 + up_s + LATENCY_S + 1e-3  # the cloud starts sending the response
    received_at = sent_at + LATENCY_S + down_s
    tail = result.radio_states[result.radio_states["state"] == "tail"]
    assert tail["end_s"].max() == pytest.approx(received_at + 11.576, rel=EXACT)
    assert result.summary["window_end_s"] == pytest.approx(received_at + 11.576, rel=EXACT)
    connected = result.radio_states[result.radio_states["state"] == "connected"]
    assert connected["start_s"].max() == pytest.approx(sent_at + LATENCY_S, rel=EXACT)


def test_the_lte_preset_is_the_rrc_model():
    doc = {
        "name": "preset",
        "include": ["../../scenarios/networks/lte.yaml"],
        **{k: v for k, v in upload_doc([0]).items() if k != "name"},
    }
    doc["links"]["lte"] = {"preset": "lte", "ends": ["phone", "cloud"]}
    from pathlib import Path

    scenario = parse_scenario(doc, base_dir=Path(__file__).parent)
    radio = scenario.platform.network.links["lte"].radio
    assert radio.model == "rrc" and radio.promotion_s == 0.26 and radio.tail_s == 11.576
