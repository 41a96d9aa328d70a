"""Engine results against numbers computed by hand (exact where the maths is exact)."""

from __future__ import annotations

import copy

import pytest

from simulator.engine import simulate
from simulator.spec import parse_scenario

EXACT = 1e-12


def test_cross_unit_chain_latency_energy_and_memory(small_soc):
    result = simulate(parse_scenario(small_soc))
    # a: 1e6 / 1e9 = 1 ms on cpu; a->b: 100 us + 4000 B / 1 GB/s = 104 us;
    # b: 2e6 / 4e9 = 0.5 ms on gpu; b->c: 100 us + 2000 B / 1 GB/s = 102 us; c: 1 ms.
    latency = 1e-3 + 104e-6 + 0.5e-3 + 102e-6 + 1e-3
    assert result.requests["latency_s"].iloc[0] == pytest.approx(latency, rel=EXACT)
    ops = result.ops.set_index("op")
    assert ops.loc["b", "start_s"] == pytest.approx(1.104e-3, rel=EXACT)
    assert ops.loc["c", "start_s"] == pytest.approx(1.706e-3, rel=EXACT)
    # energy over the window [0, 2.706 ms]: idle while not busy, active while busy
    units = result.units.set_index("unit")
    cpu_j = 0.1 * (latency - 2e-3) + 1.0 * 2e-3
    gpu_j = 0.2 * (latency - 0.5e-3) + 2.0 * 0.5e-3
    assert units.loc["phone.cpu", "energy_j"] == pytest.approx(cpu_j, rel=EXACT)
    assert units.loc["phone.gpu", "energy_j"] == pytest.approx(gpu_j, rel=EXACT)
    assert result.summary["energy_j"] == pytest.approx(cpu_j + gpu_j, rel=EXACT)
    assert result.summary["device_energy_j"] == pytest.approx(cpu_j + gpu_j, rel=EXACT)
    # request energy: active power x op time (idle is not attributed to requests)
    assert result.requests["energy_j"].iloc[0] == pytest.approx(
        1.0 * 2e-3 + 2.0 * 0.5e-3, rel=EXACT
    )
    # memory on the cpu: weights 400 B; input 2000 B + a's output 4000 B live while a runs
    assert units.loc["phone.cpu", "weights_bytes"] == 400
    assert units.loc["phone.cpu", "peak_memory_bytes"] == 400 + 2000 + 4000
    # gpu: a's 4000 B copy arrives, b's 2000 B output allocated while b runs
    assert units.loc["phone.gpu", "peak_memory_bytes"] == 4000 + 2000


def test_offload_over_a_radio_link(phone_cloud):
    result = simulate(parse_scenario(phone_cloud))
    upload_s = 1e6 * 8 / 10e6  # 1 MB input at 10 Mbit/s
    download_s = 4000 * 8 / 20e6  # 4 kB output back at 20 Mbit/s
    latency = upload_s + 0.020 + 1e9 / 1e12 + download_s + 0.020
    assert result.requests["latency_s"].iloc[0] == pytest.approx(latency, rel=EXACT)
    assert result.summary["decision"] == "cloud"
    energy = result.energy.set_index("component")
    radio_j = 0.1 * latency + (2.0 - 0.1) * upload_s + (1.0 - 0.1) * download_s
    assert energy.loc["radio:uplink", "energy_j"] == pytest.approx(radio_j, rel=EXACT)
    cloud_j = 10 * (latency - 1e-3) + 50 * 1e-3
    assert result.summary["cloud_energy_j"] == pytest.approx(cloud_j, rel=EXACT)
    phone_cpu_j = 0.1 * latency
    assert result.summary["device_energy_j"] == pytest.approx(radio_j + phone_cpu_j, rel=EXACT)
    hops = result.transfers[result.transfers["kind"] == "network"]
    assert list(hops["bytes"]) == [1_000_000, 4000]
    assert list(hops["src_node"]) == ["phone", "cloud"]


def test_requests_queue_behind_each_other_fifo(small_soc):
    doc = copy.deepcopy(small_soc)
    doc["placement"] = {"policy": "single", "unit": "cpu"}
    doc["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 1}
    doc["workload"][0]["count"] = 4
    result = simulate(parse_scenario(doc))
    # 4 ms of work per request on one unit, one arrival per ms: request k finishes at 4(k+1)
    finish = result.requests.sort_values("request_id")["finish_s"].to_numpy()
    assert finish == pytest.approx([4e-3, 8e-3, 12e-3, 16e-3], rel=EXACT)
    latency = result.requests.sort_values("request_id")["latency_s"].to_numpy()
    assert latency == pytest.approx([4e-3, 7e-3, 10e-3, 13e-3], rel=EXACT)
    assert result.units.set_index("unit").loc["phone.cpu", "utilisation"] == pytest.approx(1.0)


def test_closed_loop_issues_after_each_completion(small_soc):
    doc = copy.deepcopy(small_soc)
    doc["placement"] = {"policy": "single", "unit": "cpu"}
    doc["workload"][0]["arrival"] = {"process": "closed_loop", "concurrency": 1, "think_ms": 2}
    doc["workload"][0]["count"] = 3
    result = simulate(parse_scenario(doc))
    arrivals = result.requests.sort_values("request_id")["arrival_s"].to_numpy()
    assert arrivals == pytest.approx([0.0, 6e-3, 12e-3], rel=EXACT)  # 4 ms work + 2 ms think
    assert result.requests["latency_s"].to_numpy() == pytest.approx([4e-3] * 3, rel=EXACT)


def test_duration_bounds_arrivals(small_soc):
    doc = copy.deepcopy(small_soc)
    doc["workload"][0].pop("count")
    doc["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 30}
    doc["duration_s"] = 0.1
    result = simulate(parse_scenario(doc))
    assert result.requests["arrival_s"].to_numpy() == pytest.approx([0, 0.03, 0.06, 0.09])


def test_trace_arrivals_and_deadlines(small_soc):
    doc = copy.deepcopy(small_soc)
    doc["workload"][0].pop("count")
    doc["workload"][0]["arrival"] = {"process": "trace", "times_ms": [0, 1, 50]}
    doc["workload"][0]["deadline_ms"] = 2.8
    result = simulate(parse_scenario(doc))
    requests = result.requests.sort_values("request_id")
    assert requests["arrival_s"].to_numpy() == pytest.approx([0, 1e-3, 50e-3])
    # r1.a takes the cpu at 1 ms (r0.c is not ready until 1.706 ms), so r0.c runs
    # [2, 3] ms and r1.c [3, 4] ms: both take 3 ms; r2 runs alone in 2.706 ms.
    assert requests["latency_s"].to_numpy() == pytest.approx([3e-3, 3e-3, 2.706e-3], rel=EXACT)
    assert list(requests["deadline_met"]) == [False, False, True]
    assert result.summary["deadline_met_rate"] == pytest.approx(1 / 3)


def test_explicit_cost_table_and_comm_cost():
    doc = {
        "name": "table",
        "nodes": {"host": {"units": {"p1": {"kind": "cpu"}, "p2": {"kind": "gpu"}}}},
        "models": {
            "dag": {
                "ops": [
                    {"name": "t1", "time_ms": {"p1": 14, "p2": 16}},
                    {"name": "t2", "time_ms": {"p1": 13, "p2": 19}},
                    {"name": "t3", "time_ms": {"p1": 11, "p2": 13}},
                    {"name": "t4", "time_ms": {"p1": 7, "p2": 8}},
                ],
                "edges": [
                    {"src": "t1", "dst": "t2", "comm_ms": 18},
                    {"src": "t1", "dst": "t3", "comm_ms": 12},
                    {"src": "t2", "dst": "t4", "comm_ms": 9},
                    {"src": "t3", "dst": "t4", "comm_ms": 11},
                ],
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "dag",
                "source": "host",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
        "placement": {"policy": "manual", "rules": [{"ops": "t3", "unit": "p2"}], "default": "p1"},
    }
    result = simulate(parse_scenario(doc))
    ops = result.ops.set_index("op")
    # t1 on p1 [0,14]; t2 on p1 [14,27] (same unit: no comm); t3 on p2 from 14+12=26 to 39;
    # t4 on p1 waits for t3's result at 39 + 11 = 50, ends at 57.
    assert ops.loc["t3", "start_s"] == pytest.approx(0.026, rel=EXACT)
    assert ops.loc["t4", "start_s"] == pytest.approx(0.050, rel=EXACT)
    assert result.requests["latency_s"].iloc[0] == pytest.approx(0.057, rel=EXACT)
