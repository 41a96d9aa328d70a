"""Many units and apps sharing a platform: core slots, barriers, schedulers, sync pairs,
replicas and dispatchers — against hand-computed schedules."""

from __future__ import annotations

import copy
import math

import pytest

from simulator.engine import plan_replicas, simulate
from simulator.errors import ScenarioError
from simulator.graph import Op
from simulator.hardware import ComputeUnit, amdahl_speedup, op_time_s
from simulator.spec import parse_scenario

EXACT = 1e-12


def one_op_model(flops: float, parallel_fraction: float = 1.0) -> dict:
    return {
        "ops": [
            {"name": "x", "kind": "conv", "flops": flops, "parallel_fraction": parallel_fraction}
        ]
    }


def cluster_doc(cores: int, cores_per_op: int | None, count: int, barrier_us: float = 0) -> dict:
    cpu = {
        "kind": "cpu",
        "cores": cores,
        "peak_gflops": {"fp32": 1},
        "idle_w": 0.5,
        "active_w": 4.5,
        "barrier_us": barrier_us,
    }
    if cores_per_op:
        cpu["cores_per_op"] = cores_per_op
    return {
        "name": "cluster",
        "nodes": {"phone": {"units": {"cpu": cpu}}},
        "models": {"m": one_op_model(4e6)},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 0.001},
                "count": count,
            }
        ],
        "placement": {"policy": "single", "unit": "cpu"},
    }


def test_ops_share_a_cluster_by_core_slots():
    # 4 cores, 2 per op: two ops at once, each 4e6 FLOP / (1 GFLOP/s x 2 cores) = 2 ms
    result = simulate(parse_scenario(cluster_doc(4, 2, 4)))
    ops = result.ops.sort_values("request_id")
    assert ops["start_s"].to_numpy() == pytest.approx([0, 1e-6, 2e-3, 2.001e-3], rel=EXACT)
    assert (ops["end_s"] - ops["start_s"]).to_numpy() == pytest.approx([2e-3] * 4, rel=EXACT)
    # energy: each op draws half the cluster's active power above idle
    window = result.summary["window_end_s"] - result.summary["window_start_s"]
    busy = 4 * 2e-3 * 2 / 4
    units = result.units.set_index("unit")
    assert units.loc["phone.cpu", "busy_s"] == pytest.approx(busy, rel=EXACT)
    assert units.loc["phone.cpu", "energy_j"] == pytest.approx(
        0.5 * (window - busy) + 4.5 * busy, rel=EXACT
    )
    assert result.ops["energy_j"].to_numpy() == pytest.approx([4.5 * 0.5 * 2e-3] * 4, rel=EXACT)


def test_whole_cluster_ops_run_one_at_a_time():
    result = simulate(parse_scenario(cluster_doc(4, None, 3)))
    ops = result.ops.sort_values("request_id")
    assert ops["start_s"].to_numpy() == pytest.approx([0, 1e-3, 2e-3], rel=EXACT)


def test_barrier_grows_with_cores_and_caps_the_speedup():
    def unit(n):
        return ComputeUnit(
            "cpu", "cpu", peak_flops={"fp32": 1e9}, cores=8, cores_per_op=n, barrier_s=20e-6
        )

    op = Op("x", "conv", flops=2e6, parallel_fraction=0.95)
    times = {n: op_time_s(op, unit(n)) for n in (1, 2, 4, 8)}
    for n, t in times.items():
        by_hand = 2e6 / (1e9 * amdahl_speedup(0.95, n)) + 20e-6 * math.log2(n)
        assert t == pytest.approx(by_hand, rel=EXACT)
    assert times[1] / times[8] < amdahl_speedup(0.95, 8) < 1 / 0.05  # barrier and Amdahl ceiling


def two_apps(scheduler: str) -> dict:
    return {
        "name": "two_apps",
        "scheduler": scheduler,
        "nodes": {"phone": {"units": {"npu": {"kind": "npu", "peak_gflops": {"fp32": 1}}}}},
        "models": {"long": one_op_model(5e6), "short": one_op_model(1e6)},
        "workload": [
            {
                "app": "background",
                "model": "long",
                "source": "phone",
                "priority": 0,
                "arrival": {"process": "trace", "times_ms": [0, 0, 0]},
                "deadline_ms": 100,
            },
            {
                "app": "camera",
                "model": "short",
                "source": "phone",
                "priority": 5,
                "arrival": {"process": "trace", "times_ms": [1]},
                "deadline_ms": 3,
            },
        ],
        "placement": {"policy": "single", "unit": "npu"},
    }


@pytest.mark.parametrize(
    ("scheduler", "camera_latency_ms"),
    [
        # fcfs: the camera request (id 3) waits for all three 5 ms background ops
        ("fcfs", 15 - 1 + 1),
        # priority and edf: it runs as soon as the first background op ends at 5 ms
        ("priority", 5 - 1 + 1),
        ("edf", 5 - 1 + 1),
    ],
)
def test_unit_schedulers_order_ready_ops(scheduler, camera_latency_ms):
    result = simulate(parse_scenario(two_apps(scheduler)))
    camera = result.requests[result.requests["app"] == "camera"]
    assert camera["latency_s"].iloc[0] == pytest.approx(camera_latency_ms / 1e3, rel=EXACT)


def test_unknown_scheduler_is_a_scenario_error():
    with pytest.raises(ScenarioError, match="did you mean 'edf'"):
        parse_scenario(two_apps("edd"))


def test_sync_pairs_set_cost_and_mechanism(small_soc):
    doc = copy.deepcopy(small_soc)
    doc["nodes"]["phone"]["sync_pairs"] = [
        {"units": ["cpu", "gpu"], "mechanism": "driver_call", "sync_us": 40}
    ]
    result = simulate(parse_scenario(doc))
    onchip = result.transfers[result.transfers["kind"] == "onchip"]
    assert set(onchip["mechanism"]) == {"driver_call"}
    # as test_hand_computed's chain with 40 us instead of 100 us per sync
    latency = 1e-3 + 44e-6 + 0.5e-3 + 42e-6 + 1e-3
    assert result.requests["latency_s"].iloc[0] == pytest.approx(latency, rel=EXACT)
    doc["nodes"]["phone"]["sync_pairs"][0]["units"] = ["cpu", "tpu"]
    with pytest.raises(ScenarioError, match="unknown unit"):
        parse_scenario(doc)


def replicas_doc(dispatch: str, count: int = 6) -> dict:
    units = {f"u{k}": {"kind": "cpu", "peak_gflops": {"fp32": 1}} for k in range(3)}
    return {
        "name": "replicas",
        "seed": 5,
        "nodes": {"host": {"units": units}},
        "models": {"m": one_op_model(3e6)},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "host",
                "count": count,
                "dispatch": dispatch,
                "arrival": {"process": "periodic", "period_ms": 1},
                "replicas": [{"policy": "single", "unit": f"u{k}"} for k in range(3)],
            }
        ],
    }


def test_round_robin_spreads_requests_and_removes_queueing():
    result = simulate(parse_scenario(replicas_doc("round_robin")))
    requests = result.requests.sort_values("request_id")
    assert list(requests["replica"]) == [0, 1, 2, 0, 1, 2]
    # 3 ms of work every 1 ms over three units: nobody waits
    assert requests["latency_s"].to_numpy() == pytest.approx([3e-3] * 6, rel=EXACT)
    assert set(result.units["utilisation"].round(6)) == {round(6e-3 / 8e-3, 6)}


@pytest.mark.parametrize("dispatch", ["jsq", "least_loaded", "power_of_two"])
def test_load_aware_dispatchers_never_queue_when_a_replica_is_free(dispatch):
    result = simulate(parse_scenario(replicas_doc(dispatch)))
    if dispatch == "power_of_two":  # two random replicas: may pick a busy one, but deterministic
        again = simulate(parse_scenario(replicas_doc(dispatch)))
        assert list(again.requests["replica"]) == list(result.requests["replica"])
        return
    assert result.requests["latency_s"].to_numpy() == pytest.approx([3e-3] * 6, rel=EXACT)
    assert result.requests["replica"].nunique() == 3


def test_replicas_are_planned_and_reported_each():
    scenario = parse_scenario(replicas_doc("jsq"))
    plans = plan_replicas(scenario)["a"]
    assert [set(p.units) for p in plans] == [{"host.u0"}, {"host.u1"}, {"host.u2"}]
    result = simulate(scenario)
    assert list(result.apps["replica"]) == [0, 1, 2]
    assert set(result.placement["replica"]) == {0, 1, 2}


def test_placement_and_replicas_are_exclusive():
    doc = replicas_doc("jsq")
    doc["workload"][0]["placement"] = {"policy": "single", "unit": "u0"}
    with pytest.raises(ScenarioError, match="either 'placement' or 'replicas'"):
        parse_scenario(doc)
