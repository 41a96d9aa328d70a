"""3G (two-stage tail), Wi-Fi and 5G radios against closed-form energies and latencies.

The 3G figures are the ``3g`` preset's (AT&T ARO i997 profile for the state machine, Huang
et al. MobiSys 2012 for the connected power); every expected value is written out by hand.
"""

from __future__ import annotations

import copy
import signal
from pathlib import Path

import pytest
from conftest import phone_cloud_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine import plan_apps, simulate
from simulator.errors import ScenarioError
from simulator.network.radio import Radio, TailStage
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXACT = 1e-12
HERE = Path(__file__).parent
UMTS = {
    "model": "rrc_stages",
    "idle_w": 0.0,
    "promotion_ms": 2000,
    "promotion_w": 0.65,
    "base_w": 0.81788,
    "alpha_up_mw_per_mbps": 868.98,
    "alpha_down_mw_per_mbps": 122.12,
    "tail": [
        {"state": "tail_dch", "duration_ms": 4000, "power_w": 1.30},
        {
            "state": "fach",
            "duration_ms": 10000,
            "power_w": 0.30,
            "promotion_ms": 1500,
            "promotion_w": 0.80,
        },
    ],
}
UP_BPS, LATENCY_S, CLOUD_S = 1.1e6, 0.1, 1e-3  # 3G uplink, one-way latency, cloud op time
UP_S = 8e6 / UP_BPS  # a 1 MB upload
UP_W = 0.81788 + 868.98e-9 * UP_BPS  # Huang's 3G power while sending at 1.1 Mbit/s


def upload_doc(times_ms, radio, up_mbps=1.1, down_mbps=2.0, latency_ms=100.0) -> dict:
    """A phone offloading one 1 GFLOP op (1 MB input, no output) to a 1 TFLOP/s cloud."""
    return {
        "name": "radio_upload",
        "nodes": phone_cloud_nodes(),
        "links": {
            "air": {
                "ends": ["phone", "cloud"],
                "latency_ms": latency_ms,
                "bandwidth_mbps": up_mbps,
                "reverse_bandwidth_mbps": down_mbps,
                "radio": copy.deepcopy(radio),
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "conv",
                        "flops": 1e9,
                        "input_elems": 250_000,
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


def by_state(result) -> dict:
    return result.radio_states.groupby("state")["energy_j"].sum().to_dict()


def latencies(result) -> list:
    return list(result.requests.sort_values("request_id")["latency_s"])


def test_isolated_3g_upload_pays_idle_promotion_transfer_and_both_tail_stages():
    result = simulate(parse_scenario(upload_doc([0], UMTS)))
    upload_end = 2.0 + UP_S  # IDLE -> DCH promotion first: the delay adds to latency
    response_at = upload_end + LATENCY_S + CLOUD_S  # the empty output leaves the cloud
    assert latencies(result) == pytest.approx([response_at + LATENCY_S], rel=EXACT)
    states = by_state(result)
    assert states["promotion"] == pytest.approx(2.0 * 0.65, rel=EXACT)
    assert states["connected"] == pytest.approx(UP_W * UP_S, rel=EXACT)
    # DCH is held from the upload's end; the response restarts it (inside T1) when it
    # reaches the phone, one latency after the cloud sends it: 0.201 + 4 s
    reached = response_at + LATENCY_S
    assert states["tail_dch"] == pytest.approx((reached - upload_end + 4.0) * 1.30, rel=EXACT)
    assert states["fach"] == pytest.approx(10.0 * 0.30, rel=EXACT)  # then the whole of T2
    assert result.summary["window_end_s"] == pytest.approx(reached + 14.0, rel=EXACT)
    row = result.energy.set_index("component").loc["radio:air"]
    assert row["energy_j"] == pytest.approx(sum(states.values()), rel=EXACT)


def test_a_second_3g_upload_starting_in_fach_pays_the_fach_promotion_and_restarts_the_tail():
    first_response = 2.0 + UP_S + LATENCY_S + CLOUD_S + LATENCY_S  # at the phone
    second = 16.0  # FACH runs from first_response + 4 = 13.47 s to first_response + 14 = 23.47 s
    assert first_response + 4 < second < first_response + 14
    result = simulate(parse_scenario(upload_doc([0, second * 1e3], UMTS)))
    # FACH -> DCH promotion: 1.5 s instead of IDLE -> DCH's 2 s
    round_trip = UP_S + LATENCY_S + CLOUD_S + LATENCY_S
    assert latencies(result) == pytest.approx([2.0 + round_trip, 1.5 + round_trip], rel=EXACT)
    states = by_state(result)
    assert states["promotion"] == pytest.approx(2.0 * 0.65 + 1.5 * 0.80, rel=EXACT)
    assert states["connected"] == pytest.approx(2 * UP_W * UP_S, rel=EXACT)
    dch_s = LATENCY_S + CLOUD_S + LATENCY_S + 4.0  # each: upload end -> response in -> T1
    assert states["tail_dch"] == pytest.approx(2 * dch_s * 1.30, rel=EXACT)
    # FACH: cut short by the second upload, then all of it after the second response
    fach_s = (second - (first_response + 4.0)) + 10.0
    assert states["fach"] == pytest.approx(fach_s * 0.30, rel=EXACT)
    second_response = second + 1.5 + UP_S + LATENCY_S + CLOUD_S + LATENCY_S
    assert result.summary["window_end_s"] == pytest.approx(second_response + 14.0, rel=EXACT)
    assert "idle" not in states  # never idle inside the window


def test_an_upload_after_the_3g_tail_has_ended_pays_the_idle_promotion_again():
    result = simulate(parse_scenario(upload_doc([0, 40_000], UMTS)))
    round_trip = UP_S + LATENCY_S + CLOUD_S + LATENCY_S
    assert latencies(result) == pytest.approx([2.0 + round_trip] * 2, rel=EXACT)
    states = by_state(result)
    assert states["promotion"] == pytest.approx(2 * 2.0 * 0.65, rel=EXACT)
    assert states["fach"] == pytest.approx(2 * 10.0 * 0.30, rel=EXACT)
    idle = result.radio_states[result.radio_states["state"] == "idle"]
    first_idle_s = 2.0 + round_trip + 14.0  # first response at the phone + T1 + T2
    assert len(idle) == 1
    assert [idle["start_s"].iloc[0], idle["end_s"].iloc[0]] == pytest.approx(
        [first_idle_s, 40.0], rel=EXACT
    )


def test_wifi_isolated_upload_pays_no_promotion_and_a_quarter_second_tail():
    wifi = {
        "model": "rrc",
        "idle_w": 0.02,
        "promotion_ms": 0,
        "promotion_w": 0.0,
        "base_w": 0.13286,
        "alpha_up_mw_per_mbps": 283.17,
        "alpha_down_mw_per_mbps": 137.01,
        "tail_ms": 250,
        "tail_w": 0.13286,
    }
    doc = upload_doc([0], wifi, up_mbps=18.88, down_mbps=18.88, latency_ms=5)
    result = simulate(parse_scenario(doc))
    up_s = 8e6 / 18.88e6
    response_at = up_s + 0.005 + CLOUD_S
    assert latencies(result) == pytest.approx([response_at + 0.005], rel=EXACT)
    states = by_state(result)
    assert "promotion" not in states
    assert states["connected"] == pytest.approx(
        5.4791096 * up_s, rel=EXACT
    )  # 283.17 x 18.88 + 132.86 mW
    # the tail runs from the upload's end until the response reaches the phone, then 0.25 s
    reached = response_at + 0.005
    assert states["tail"] == pytest.approx((reached - up_s + 0.25) * 0.13286, rel=EXACT)
    assert sum(states.values()) == pytest.approx(
        5.4791096 * up_s + (0.011 + 0.25) * 0.13286, rel=EXACT
    )


def preset_doc(preset: str, times_ms) -> dict:
    doc = upload_doc(times_ms, UMTS)
    doc["include"] = [f"../../scenarios/networks/{preset}.yaml"]
    doc["links"]["air"] = {"preset": preset, "ends": ["phone", "cloud"]}
    return doc


def test_the_3g_preset_is_the_two_stage_umts_machine():
    scenario = parse_scenario(preset_doc("3g", [0]), base_dir=HERE)
    radio = scenario.platform.network.links["air"].radio
    bounded = {**UMTS, "measured_up_mbps": 2.0, "measured_down_mbps": 4.0, "max_w": 2.55584}
    assert radio == parse_scenario(upload_doc([0], bounded)).platform.network.links["air"].radio
    assert [s.state for s in radio.tail] == ["tail_dch", "fach"] and radio.tail_s == 14.0


def test_the_wifi_preset_has_a_quarter_second_tail_and_no_promotion():
    radio = (
        parse_scenario(preset_doc("wifi", [0]), base_dir=HERE).platform.network.links["air"].radio
    )
    assert (radio.model, radio.promotion_s, radio.tail) == (
        "rrc",
        0.0,
        (TailStage("tail", 0.25, 0.13286),),
    )
    assert radio.connected_power_w(18.88e6, 0) == pytest.approx(5.4791096, rel=EXACT)


def test_the_5g_preset_loads_and_pays_lte_promotion_and_a_ten_second_tail():
    result = simulate(parse_scenario(preset_doc("5g", [0]), base_dir=HERE))
    up_s = 8e6 / 40e6
    response_at = 0.26 + up_s + 0.015 + CLOUD_S
    assert latencies(result) == pytest.approx([response_at + 0.015], rel=EXACT)
    states = by_state(result)
    assert states["promotion"] == pytest.approx(0.26 * 1.21, rel=EXACT)
    # 2 x 1288.04 mW + 64.1145 mW/Mbps x 40 Mbit/s = 5140.66 mW
    assert states["connected"] == pytest.approx(5.14066 * up_s, rel=EXACT)
    reached = response_at + 0.015  # the response at the phone restarts the tail
    assert states["tail"] == pytest.approx((reached - 0.26 - up_s + 10.0) * 2.12, rel=EXACT)


def test_pure_stage_lookup_promotion_and_tail_energy():
    radio = parse_scenario(upload_doc([0], UMTS)).platform.network.links["air"].radio
    assert radio.stage_at(None, 5.0) is None  # never used: idle
    assert [radio.stage_at(10.0, t) for t in (10.0, 13.9, 14.0, 23.9, 24.0)] == [0, 0, 1, 1, None]
    assert radio.promotion(None) == (2.0, 0.65)
    assert radio.promotion(0) == (0.0, 0.0)  # DCH still carries data at once
    assert radio.promotion(1) == (1.5, 0.80)
    assert radio.tail_energy_j(3.0) == pytest.approx(3.9, rel=EXACT)
    assert radio.tail_energy_j(6.0) == pytest.approx(5.2 + 0.6, rel=EXACT)
    assert radio.tail_energy_j(100.0) == pytest.approx(5.2 + 3.0, rel=EXACT)


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        (
            {"state": "idle", "duration_ms": 1, "power_w": 1},
            "not one of idle, promotion, connected",
        ),
        ({"state": "fach", "duration_s": 1, "power_w": 1}, "duration_ms"),
        ({"state": "fach", "duration_ms": -1, "power_w": 1}, ">= 0"),
    ],
)
def test_bad_tail_stages_are_scenario_errors_naming_the_place(stage, message):
    radio = copy.deepcopy(UMTS)
    radio["tail"][1] = stage
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(upload_doc([0], radio))
    text = str(caught.value)
    assert "links.air.radio" in text and message in text


def test_duplicate_stage_names_are_rejected():
    radio = copy.deepcopy(UMTS)
    radio["tail"][1]["state"] = "tail_dch"
    with pytest.raises(ScenarioError, match="must be unique"):
        parse_scenario(upload_doc([0], radio))


def test_a_constant_radio_has_no_tail_and_a_stateful_one_needs_one():
    assert not Radio(tx_w=1.0, rx_w=1.0).stateful
    with pytest.raises(Exception, match="at least one tail stage"):
        Radio("rrc_stages", promotion_s=1.0)


ms = st.floats(0, 300)


@settings(max_examples=40, deadline=None)
@given(
    promotion_ms=ms,
    stage_ms=st.lists(st.tuples(ms, st.floats(0, 2), ms, st.floats(0, 2)), min_size=1, max_size=3),
    gflop=st.lists(st.floats(1e-3, 1.0), min_size=3, max_size=3),
    kbytes=st.lists(st.integers(1, 200), min_size=3, max_size=3),
    first_on_cloud=st.booleans(),
)
def test_a_lone_request_through_a_staged_radio_matches_the_estimate(
    promotion_ms, stage_ms, gflop, kbytes, first_on_cloud
):
    """Engine == estimate (latency bit for bit, radio energy) whatever stage each hop meets."""
    radio = {
        **{k: v for k, v in UMTS.items() if k != "tail"},
        "promotion_ms": promotion_ms,
        "tail": [
            {
                "state": f"s{k}",
                "duration_ms": d,
                "power_w": p,
                "promotion_ms": pd,
                "promotion_w": pw,
            }
            for k, (d, p, pd, pw) in enumerate(stage_ms)
        ],
    }
    doc = upload_doc([0], radio, up_mbps=8, down_mbps=16, latency_ms=20)
    doc["models"]["m"] = {
        "ops": [
            {
                "name": f"x{j}",
                "kind": "conv",
                "flops": gflop[j] * 1e9,
                "output_elems": kbytes[j] * 250,
            }
            for j in range(3)
        ],
        "edges": [{"src": "x0", "dst": "x1"}, {"src": "x1", "dst": "x2"}],
    }
    doc["models"]["m"]["ops"][0]["input_elems"] = kbytes[0] * 250
    first = "cloud.gpu" if first_on_cloud else "phone.cpu"
    rules = [
        {"ops": "x0", "unit": first},
        {"ops": "x1", "unit": "cloud.gpu"},
        {"ops": "x2", "unit": "phone.cpu"},
    ]
    doc["placement"] = {"policy": "manual", "rules": rules, "default": "phone.cpu"}
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    predicted = estimate(plan_apps(scenario, oracle)["a"], oracle)
    result = simulate(scenario)
    assert result.requests["latency_s"].iloc[0] == predicted.latency_s
    row = result.energy.set_index("component").loc["radio:air"]
    assert row["active_energy_j"] == pytest.approx(predicted.radio_energy_j, rel=1e-9, abs=1e-12)


def test_fast_transfers_late_in_a_run_finish_despite_the_clock_resolution():
    """200 Mbit/s leaves a sub-ulp remainder after a minute of simulated time; it used to
    re-wake the link at the same instant forever (found running the 5G preset)."""
    doc = preset_doc("5g", [k * 20_000 for k in range(6)])
    doc["models"]["m"]["ops"][0]["output_elems"] = 1000  # 4 kB back at 200 Mbit/s
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the link never finished"))
    signal.alarm(30)
    try:
        result = simulate(parse_scenario(doc, base_dir=HERE))
    finally:
        signal.alarm(0)
    assert (result.requests["status"] == "completed").all() and len(result.requests) == 6
    down = result.transfers[result.transfers["dst_node"] == "phone"]
    assert list(down["end_s"] - down["start_s"]) == pytest.approx([4000 * 8 / 200e6] * 6, rel=1e-9)
