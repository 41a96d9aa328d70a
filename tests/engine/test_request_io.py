"""Requests as apps send them (issue 20 item 7): input bytes or a JPEG of the frame,
response bytes (0: no return transfer) and a fixed energy window, hand-computed on the
phone-cloud scenario of conftest (10 Mbit/s up, 20 Mbit/s down, 20 ms, 1 ms on the cloud
GPU, a constant radio: tx 2 W, rx 1 W, idle 0.1 W)."""

from __future__ import annotations

import copy
import itertools
import math

import pytest
from conftest import phone_cloud_document

from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.network.jpeg import SOURCE_PIXELS, SOURCE_SIZES, jpeg_bits_per_pixel, jpeg_bytes
from simulator.spec import parse_scenario
from simulator.sweep.execute import fast_path_applies, fast_summary

UP_BPS, DOWN_BPS, LATENCY_S, GPU_S = 10e6, 20e6, 0.02, 1e-3
OUTPUT_BYTES = 4000  # 1000 fp32 elements


def run_with(trace: str = "full", **entry):
    doc = phone_cloud_document()
    doc["workload"][0].update(entry)
    return simulate(parse_scenario(doc), trace=trace)


def network(result):
    return result.transfers[result.transfers["kind"] == "network"]


def test_input_bytes_replace_the_tensor_on_the_network():
    result = run_with(input={"bytes": 1000})
    up = network(result).iloc[0]
    assert up["bytes"] == 1000 and up["end_s"] - up["start_s"] == pytest.approx(1000 * 8 / UP_BPS)
    expected_s = 1000 * 8 / UP_BPS + LATENCY_S + GPU_S + OUTPUT_BYTES * 8 / DOWN_BPS + LATENCY_S
    assert result.summary["latency_mean_s"] == pytest.approx(expected_s, rel=1e-12)


def test_response_zero_means_no_return_transfer():
    result = run_with(input={"bytes": 1000}, response_bytes=0)
    assert len(network(result)) == 1  # the upload only: no radio wakes up for an answer
    assert result.summary["latency_mean_s"] == pytest.approx(
        1000 * 8 / UP_BPS + LATENCY_S + GPU_S, rel=1e-12
    )
    # the radio is connected for the upload only (0.8 ms), idle until the op ends
    states = result.radio_states
    connected = states[states["state"] == "connected"]
    assert connected[["start_s", "end_s"]].values.tolist() == [[0.0, 1000 * 8 / UP_BPS]]
    assert states["end_s"].max() == result.summary["window_end_s"]
    assert result.ops["op"].tolist() == ["big"]


def test_response_bytes_size_the_download():
    down = network(run_with(input={"bytes": 1000}, response_bytes=100)).iloc[1]
    assert down["bytes"] == 100
    assert down["end_s"] - down["start_s"] == pytest.approx(100 * 8 / DOWN_BPS)


def test_jpeg_model_reproduces_the_published_sizes():
    for quality, nbytes in SOURCE_SIZES:
        assert jpeg_bits_per_pixel(quality) == nbytes * 8 / SOURCE_PIXELS
        # the source's own picture comes back at its own size (headers included there)
        assert jpeg_bytes(SOURCE_PIXELS, 1, quality, None) == nbytes
    qualities = [1 + k * 0.5 for k in range(199)]
    sizes = [jpeg_bits_per_pixel(q) for q in qualities]
    assert all(a < b for a, b in itertools.pairwise(sizes))  # rises with quality
    # log-linear between 25 and 50: the geometric mean at 37.5
    assert jpeg_bits_per_pixel(37.5) == pytest.approx(math.sqrt(9553 * 15138) * 8 / SOURCE_PIXELS)


def test_jpeg_input_sends_the_models_size():
    frame = {"encode": "jpeg", "width": 640, "height": 480, "quality": 50}
    up = network(run_with(input=frame)).iloc[0]
    assert up["bytes"] == math.ceil(640 * 480 * (15138 * 8 / SOURCE_PIXELS) / 8)  # 63,478
    frame = {"encode": "jpeg", "width": 640, "height": 480, "bits_per_pixel": 2.0}
    assert network(run_with(input=frame)).iloc[0]["bytes"] == 640 * 480 * 2 // 8


def windowed(start_s: float, end_s: float, trace: str = "full"):
    doc = phone_cloud_document()
    doc["workload"][0]["input"] = {"bytes": 1000}
    doc["energy_window"] = {"start_s": start_s, "end_s": end_s}
    return simulate(parse_scenario(doc), trace=trace)


def check_energy_is_the_power_integral(result, window):
    """Every component's power rows tile exactly the window and sum to its energy."""
    power = result.power
    for row in result.energy.itertuples():
        mine = power[power["component"] == row.component].sort_values("start_s")
        assert mine["start_s"].iloc[0] == window[0] and mine["end_s"].iloc[-1] == window[1]
        assert (mine["start_s"].to_numpy()[1:] == mine["end_s"].to_numpy()[:-1]).all()
        integral = (mine["power_w"] * (mine["end_s"] - mine["start_s"])).sum()
        assert row.energy_j == pytest.approx(integral, rel=1e-12, abs=1e-15)


def test_fixed_window_meters_exactly_that_interval():
    """LEAF's 0-10 s meter, without marker requests."""
    result = windowed(0.0, 10.0)
    up_s, down_s = 1000 * 8 / UP_BPS, OUTPUT_BYTES * 8 / DOWN_BPS
    energy = result.energy.set_index("component")["energy_j"]
    assert energy["cloud.gpu"] == pytest.approx(10 * (10 - GPU_S) + 50 * GPU_S, rel=1e-12)
    assert energy["phone.cpu"] == pytest.approx(0.1 * 10, rel=1e-12)
    radio_j = 0.1 * 10 + (2.0 - 0.1) * up_s + (1.0 - 0.1) * down_s
    assert energy["radio:uplink"] == pytest.approx(radio_j, rel=1e-12)
    assert (result.summary["window_start_s"], result.summary["window_end_s"]) == (0.0, 10.0)
    check_energy_is_the_power_integral(result, (0.0, 10.0))
    # the same aggregates without any trace row (clipped as ops end)
    lean = windowed(0.0, 10.0, trace="none")
    assert lean.energy["energy_j"].tolist() == result.energy["energy_j"].tolist()


def test_a_window_that_cuts_an_op_counts_its_share():
    # the GPU op runs over [0.0208, 0.0218] s; the window ends half-way through it
    result = windowed(0.01, 0.0213)
    gpu = result.energy.set_index("component")["energy_j"]["cloud.gpu"]
    assert gpu == pytest.approx(10 * (0.0113 - 0.0005) + 50 * 0.0005, rel=1e-9)
    check_energy_is_the_power_integral(result, (0.01, 0.0213))
    assert result.summary["completed"] == 1  # the run itself is not cut


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"energy_window": {"start_s": 5, "end_s": 5}},
            "energy_window.end_s: energy_window ends at 5 s, not after its start 5 s",
        ),
        ({"energy_window": {"start_s": 0}}, "missing required key 'end_s'"),
    ],
)
def test_window_errors(change, message):
    doc = {**phone_cloud_document(), **change}
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"input": {"encode": "png", "bytes": 3}},
            "unknown input encoding 'png'; valid: jpeg, none",
        ),
        (
            {"input": {"encode": "jpeg", "width": 640, "quality": 80}},
            "workload[0].input: missing required key 'height'",
        ),
        (
            {"input": {"encode": "jpeg", "width": 640, "height": 480, "quality": 0}},
            "workload[0].input.quality: expected a number >= 1 and <= 100",
        ),
        (
            {"input": {"encode": "jpeg", "width": 6, "height": 4}},
            "give exactly one of quality, bits_per_pixel",
        ),
        ({"input": {"bytez": 3}}, "unknown key 'bytez'"),
        ({"response_bytes": -1}, "workload[0].response_bytes: expected a whole number >= 0"),
    ],
)
def test_request_errors_name_the_path(entry, message):
    doc = copy.deepcopy(phone_cloud_document())
    doc["workload"][0].update(entry)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    assert message in str(caught.value)


def test_sweeps_fast_path_uses_the_apps_sizes():
    """The fast path's plan cache keys on the request and response sizes too."""
    latencies = []
    for nbytes in (1000, 2000):
        doc = phone_cloud_document()
        doc["workload"][0].update(input={"bytes": nbytes}, response_bytes=0)
        scenario = parse_scenario(doc)
        assert fast_path_applies(scenario)
        latencies.append(fast_summary(scenario, 0)["latency_mean_s"])
        engine_s = simulate(scenario, trace="none").summary["latency_mean_s"]
        assert latencies[-1] == pytest.approx(engine_s, rel=1e-12)
    assert latencies[1] - latencies[0] == pytest.approx(1000 * 8 / UP_BPS, rel=1e-9)


def test_per_inference_energy_counts_the_requests_completed_in_the_window():
    doc = phone_cloud_document()
    doc["workload"][0].update(count=3, input={"bytes": 1000})  # at 0, 2 and 4 s
    doc["energy_window"] = {"start_s": 0.0, "end_s": 3.0}
    summary = simulate(parse_scenario(doc), trace="none").summary
    assert summary["completed"] == 3
    assert summary["energy_per_inference_j"] == pytest.approx(summary["energy_j"] / 2)
    assert summary["inferences_per_j"] == pytest.approx(2 / summary["energy_j"])
