"""Batteries: drained exactly by the node's power; the run stops when one is empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.engine import simulate
from simulator.spec import parse_scenario

EXACT = 1e-12


def battery_doc(battery_wh: float, count: int = 10) -> dict:
    return {
        "name": "battery",
        "nodes": {
            "phone": {
                "battery_wh": battery_wh,
                "units": {
                    "cpu": {
                        "kind": "cpu",
                        "peak_gflops": {"fp32": 1},
                        "idle_w": 0.0,
                        "active_w": 3.6,
                    }
                },
            }
        },
        "models": {"m": {"ops": [{"name": "x", "kind": "conv", "flops": 3e8}]}},  # 0.3 s
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "count": count,
                "arrival": {"process": "closed_loop", "concurrency": 1},
            }
        ],
        "placement": {"policy": "single", "unit": "cpu"},
    }


def test_the_run_stops_when_the_battery_is_empty():
    # 1 mWh = 3.6 J at a constant 3.6 W: empty at exactly 1 s, during the fourth op
    result = simulate(parse_scenario(battery_doc(0.001)))
    requests = result.requests.sort_values("request_id")
    assert list(requests["status"]) == ["completed"] * 3 + ["dropped"]
    assert "battery of phone empty at 1 s" in requests["drop_reason"].iloc[-1]
    assert result.summary["window_end_s"] == pytest.approx(1.0, rel=EXACT)
    assert result.summary["device_energy_j"] == pytest.approx(3.6, rel=EXACT)
    battery = result.batteries.set_index("node").loc["phone"]
    assert battery["used_j"] == pytest.approx(3.6, rel=EXACT)
    assert battery["remaining_j"] == 0.0
    assert battery["empty_at_s"] == pytest.approx(1.0, rel=EXACT)
    assert result.summary["completed"] == 3 and result.summary["dropped"] == 1


def test_a_large_battery_lasts_the_run():
    result = simulate(parse_scenario(battery_doc(1.0, count=4)))
    battery = result.batteries.set_index("node").loc["phone"]
    assert (result.requests["status"] == "completed").all()
    assert battery["used_j"] == pytest.approx(3.6 * 1.2, rel=EXACT)  # 4 ops of 0.3 s
    assert battery["remaining_j"] == pytest.approx(3600 - 4.32, rel=EXACT)
    assert battery["empty_at_s"] is None or battery["empty_at_s"] != battery["empty_at_s"]


def test_a_battery_run_ends_when_the_work_is_over():
    # regression: with idle power the battery drains forever, and the run went on until
    # it was empty (a 10-hour window for 1.2 s of work)
    doc = battery_doc(1.0, count=4)
    doc["nodes"]["phone"]["units"]["cpu"]["idle_w"] = 0.1
    result = simulate(parse_scenario(doc))
    assert (result.requests["status"] == "completed").all()
    assert result.summary["window_end_s"] == pytest.approx(1.2, rel=EXACT)
    battery = result.batteries.set_index("node").loc["phone"]
    assert battery["used_j"] == pytest.approx(3.6 * 1.2, rel=EXACT)  # busy at 3.6 W throughout


def test_a_battery_run_waits_for_the_radio_tail():
    # the LTE tail after the last upload keeps draining the battery; the run ends with it
    doc = battery_doc(1.0, count=1)
    doc["include"] = [str(Path("scenarios/networks/lte.yaml").resolve())]
    doc["nodes"]["cloud"] = {
        "role": "cloud",
        "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 1000}}},
    }
    doc["links"] = {"up": {"preset": "lte", "ends": ["phone", "cloud"]}}
    doc["placement"] = {"policy": "offload", "node": "cloud"}
    result = simulate(parse_scenario(doc))
    radio = result.radio_states
    assert radio["state"].iloc[-1] == "tail"
    assert result.summary["window_end_s"] == pytest.approx(radio["end_s"].max(), rel=EXACT)
    assert radio["end_s"].max() - radio[radio["state"] == "tail"]["start_s"].max() == pytest.approx(
        11.576, rel=1e-9
    )
