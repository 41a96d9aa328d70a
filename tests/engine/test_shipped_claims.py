"""The qualitative claims docs/sharing.md makes about the shipped scenarios."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from simulator.engine import simulate
from simulator.spec import parse_scenario

EXAMPLES = Path("scenarios/examples")


def run(name: str, **changes):
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    for path, value in changes.items():
        target = doc
        *parents, last = path.split(".")
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = copy.deepcopy(value)
    return simulate(parse_scenario(doc, base_dir=EXAMPLES))


def test_priority_scheduling_keeps_the_camera_within_its_deadline():
    def camera_met(scheduler):
        requests = run("multi_dnn_priority.yaml", scheduler=scheduler).requests
        return requests[requests["app"] == "camera"]["deadline_met"].mean()

    assert camera_met("priority") == 1.0
    assert camera_met("edf") == 1.0
    assert camera_met("fcfs") < 0.1


def test_queue_aware_dispatch_beats_round_robin_on_unequal_replicas():
    def mean_latency(dispatch):
        return run(
            "load_balancing.yaml", **{"workload.0.dispatch": dispatch, "workload.0.count": 1000}
        ).summary["latency_mean_s"]

    round_robin = mean_latency("round_robin")
    assert mean_latency("jsq") < round_robin / 10
    assert mean_latency("least_loaded") < round_robin / 10


def test_pipeline_throughput_beats_every_single_unit():
    pipeline = run("pipeline_npu_gpu.yaml", **{"workload.0.count": 60}).summary["throughput_rps"]
    for unit in ("npu", "gpu"):
        alone = run(
            "pipeline_npu_gpu.yaml",
            placement={"policy": "single", "unit": unit},
            **{"workload.0.count": 60},
        ).summary["throughput_rps"]
        assert pipeline > 1.3 * alone


def test_more_cores_per_op_lower_latency_but_not_throughput_under_load():
    one = run("amdahl_cpu_cores.yaml", **{"nodes.phone.units.cpu_big.cores_per_op": 1})
    six = run("amdahl_cpu_cores.yaml", **{"nodes.phone.units.cpu_big.cores_per_op": 6})
    assert six.apps["predicted_latency_s"].iloc[0] < one.apps["predicted_latency_s"].iloc[0] / 3
    assert six.summary["throughput_rps"] < one.summary["throughput_rps"]


def test_adaptive_offloading_beats_every_static_choice_on_the_swinging_uplink():
    # docs/adaptive.md: 447.5 ms mean against 511.6 (phone), 1523.4 (split), 8138.5 (cloud)
    adaptive = run("adaptive_offload.yaml")
    requests = adaptive.requests
    assert set(requests["decision"]) == {"device", "cloud"}
    assert requests["fell_back"].sum() == 9
    doc = yaml.safe_load((EXAMPLES / "adaptive_offload.yaml").read_text())
    static_means = []
    for spec in doc["workload"][0]["replicas"]:
        static = copy.deepcopy(doc)
        entry = static["workload"][0]
        for key in ("replicas", "dispatch", "adaptive", "transfer_timeout_ms"):
            del entry[key]  # a static app would drop the frames the adaptive one redoes
        entry["placement"] = spec
        result = simulate(parse_scenario(static, base_dir=EXAMPLES))
        static_means.append(result.summary["latency_mean_s"])
    assert min(static_means) == pytest.approx(0.5116, abs=1e-4)  # the phone alone
    assert adaptive.summary["latency_mean_s"] == pytest.approx(0.4475, abs=1e-4)
    assert adaptive.summary["latency_mean_s"] < 0.9 * min(static_means)


def test_the_loaded_cloud_example_stays_on_the_phone():
    # docs/adaptive.md#a-loaded-cloud: 64 tenants on the A100; only the frame issued at
    # t = 0, before the tenants' first requests, goes to the (still idle) cloud
    requests = run("loaded_cloud.yaml").requests
    camera = requests[requests["app"] == "camera"].sort_values("request_id")
    assert list(camera["replica"]) == [1] + [0] * 20
    phone = camera["latency_s"].iloc[1:]
    assert phone.max() == pytest.approx(phone.min(), rel=1e-9)  # alone: 138.9 ms each

    def static(placement, load_factor=1.0):
        doc = yaml.safe_load((EXAMPLES / "loaded_cloud.yaml").read_text())
        entry = doc["workload"][0]
        for key in ("replicas", "dispatch"):
            del entry[key]
        entry["placement"] = placement
        doc["nodes"]["cloud"]["load_factor"] = load_factor
        result = simulate(parse_scenario(doc, base_dir=EXAMPLES))
        return result.requests, result.ops[result.ops["app"] == "camera"]

    cloud, _ = static({"policy": "offload", "node": "cloud"})
    cloud = cloud[cloud["app"] == "camera"]["latency_s"]
    assert cloud.iloc[1:].min() > phone.max()  # the tenants' queue costs more than local
    # split_point: all remote on the idle assumption, phone only with the measured K_load
    split = {"policy": "split_point", "device": "cpu_big", "node": "cloud"}
    for factor, expected in ((1.0, {"cloud.gpu"}), (64.0, {"phone.cpu_big"})):
        _, ops = static(split, factor)
        assert set(ops["unit"]) == expected
