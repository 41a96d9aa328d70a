"""Load-aware estimates (issue 19 item 4): queued and reserved work, ``load_factor``.

Hand numbers (``conftest.phone_cloud_nodes``): a chain x -> y of two ops of 0.1 GFLOP
each; the phone cpu (1 GFLOP/s) runs each in 0.1 s, the cloud gpu (1000 GFLOP/s) in
0.1 ms; x's 1 MB input is 8 Mbit, 10 ms at 800 Mbit/s; no latency, empty tensors after
x. So the phone takes 0.2 s and the idle cloud 10 ms + 2 x 0.1 ms = 10.2 ms.
"""

from __future__ import annotations

import pytest
from conftest import phone_cloud_nodes

from simulator.engine import plan_replicas, simulate
from simulator.errors import ScenarioError
from simulator.placement.estimate import Conditions, estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXACT = 1e-9
LOCAL_S, CLOUD_S = 0.2, 0.0102


def _op(name: str, flops: float, input_elems: int = 0) -> dict:
    return {
        "name": name,
        "kind": "conv",
        "flops": flops,
        "input_elems": input_elems,
        "output_elems": 0,
    }


def doc(replicas=None, placement=None, background=False, load_factor=None) -> dict:
    cam = {
        "app": "cam",
        "model": "m",
        "source": "phone",
        "arrival": {"process": "trace", "times_ms": [10.0 if background else 0.0]},
    }
    if placement is not None:
        cam["placement"] = placement
    else:
        cam["replicas"] = replicas or [
            {"policy": "single", "unit": "cpu"},
            {"policy": "offload", "node": "cloud"},
        ]
        cam["dispatch"] = "adaptive"
    document = {
        "name": "loadaware",
        "seed": 1,
        "nodes": phone_cloud_nodes(),
        "links": {
            "up": {
                "ends": ["phone", "cloud"],
                "latency_ms": 0,
                "bandwidth_mbps": 800,
                "reverse_bandwidth_mbps": 800,
            }
        },
        "models": {
            "m": {
                "ops": [_op("x", 1e8, 250_000), _op("y", 1e8)],
                "edges": [{"src": "x", "dst": "y"}],
            },
            # a chain of three 0.1 s ops on the cloud gpu
            "bg": {
                "ops": [_op("b1", 1e11, 1), _op("b2", 1e11), _op("b3", 1e11)],
                "edges": [{"src": "b1", "dst": "b2"}, {"src": "b2", "dst": "b3"}],
            },
        },
        "workload": [cam],
    }
    if background:  # a tenant's request on the cloud gpu, issued first (at t = 0)
        document["workload"].insert(
            0,
            {
                "app": "tenant",
                "model": "bg",
                "source": "cloud",
                "arrival": {"process": "trace", "times_ms": [0.0]},
                "placement": {"policy": "single", "unit": "gpu"},
            },
        )
    if load_factor is not None:
        document["nodes"]["cloud"]["load_factor"] = load_factor
    return document


def test_queued_work_delays_only_the_first_op_on_the_unit_by_hand():
    scenario = parse_scenario(doc())
    oracle = CostOracle(scenario.platform)
    local, cloud = plan_replicas(scenario, oracle)["cam"]
    assert estimate(local, oracle).latency_s == pytest.approx(LOCAL_S, rel=EXACT)
    assert estimate(cloud, oracle).latency_s == pytest.approx(CLOUD_S, rel=EXACT)
    # 0.15 s of work ahead on the gpu: x starts at 0.15 (not 0.01), y right after
    queued = Conditions(unit_free_s={"cloud.gpu": 0.15})
    assert estimate(cloud, oracle, queued).latency_s == pytest.approx(0.1502, rel=EXACT)
    # 0.2 s ahead: 0.2002 > 0.2, the phone wins
    queued = Conditions(unit_free_s={"cloud.gpu": 0.2})
    assert estimate(cloud, oracle, queued).latency_s == pytest.approx(0.2002, rel=EXACT)


def test_load_factor_multiplies_the_node_op_times_not_their_energy():
    scenario = parse_scenario(doc())
    oracle = CostOracle(scenario.platform)
    _, cloud = plan_replicas(scenario, oracle)["cam"]
    idle = estimate(cloud, oracle)
    loaded = estimate(cloud, oracle, Conditions(load_factor={"cloud.gpu": 900.0}))
    # 10 ms upload + 2 x 0.1 ms x 900
    assert loaded.latency_s == pytest.approx(0.010 + 0.18, rel=EXACT)
    assert loaded.energy_j == idle.energy_j
    with pytest.raises(ValueError, match=r"load factor of 'cloud\.gpu' must be > 0"):
        Conditions(load_factor={"cloud.gpu": 0.0})


def test_the_adaptive_app_sees_the_queue_behind_the_ready_ops():
    # At 10 ms the tenant's b1 has 0.09 s left and b2, b3 (0.2 s) wait for it: nothing is
    # queued, so an estimate that saw only ready ops would predict the idle 10.2 ms.
    # Committed: 0.29 s -> cloud predicted 0.29 + 0.0002 = 0.2902 s > 0.2 s: the phone.
    chosen = simulate(parse_scenario(doc(background=True))).requests
    row = chosen[chosen["app"] == "cam"].iloc[0]
    assert row["decision"] == "device"
    assert row["latency_s"] == pytest.approx(LOCAL_S, rel=EXACT)
    # ... and the cloud, pinned, measures what the load-aware estimate predicts: x ready
    # at 20 ms waits for b2, b3 (fcfs: the tenant's request is older), runs at 0.3 s
    pinned = doc(background=True, placement={"policy": "offload", "node": "cloud"})
    requests = simulate(parse_scenario(pinned)).requests
    measured = requests[requests["app"] == "cam"]["latency_s"].iloc[0]
    assert measured == pytest.approx(0.2902, rel=EXACT)


def test_without_load_the_adaptive_app_offloads():
    chosen = simulate(parse_scenario(doc())).requests
    assert list(chosen["decision"]) == ["cloud"]
    assert chosen["latency_s"].iloc[0] == pytest.approx(CLOUD_S, rel=EXACT)


@pytest.mark.parametrize(
    ("policy", "factor", "cut_after"),
    [
        # cuts: all cloud 0.01 + 2 x 0.1 ms x K, after x 0.1 + 0.1 ms x K, phone 0.2 s
        ("split_point", 1.0, "<input>"),  # 0.0102 / 0.1001 / 0.2
        ("split_point", 500.0, "<input>"),  # 0.11 / 0.15 / 0.2
        ("split_point", 950.0, "x"),  # 0.2 / 0.195 / 0.2
        ("split_point", 1500.0, "y"),  # 0.31 / 0.25 / 0.2
        # min_cut adds the same terms (sequential = list schedule on a chain)
        ("min_cut", 950.0, "x"),
        ("min_cut", 1500.0, "y"),
    ],
)
def test_static_policies_weigh_the_declared_load_factor(policy, factor, cut_after):
    placement = {"policy": policy, "device": "cpu", "node": "cloud"}
    scenario = parse_scenario(doc(placement=placement, load_factor=factor))
    plan = plan_replicas(scenario)["cam"][0]
    on_phone = [op for op, uid in zip(plan.ops, plan.units, strict=True) if uid == "phone.cpu"]
    expected = {"<input>": [], "x": ["x"], "y": ["x", "y"]}[cut_after]
    assert on_phone == expected


@pytest.mark.parametrize(
    ("policy", "queued_ms", "on_phone"),
    [
        # split_point (list schedule: x starts at max(arrival 10 ms, Q)):
        #   all cloud max(0.01, Q) + 0.0002, after x max(0.1, Q) + 0.0001, phone 0.2
        ("split_point", 150.0, ["x"]),  # 0.1502 / 0.1501 / 0.2
        ("split_point", 250.0, ["x", "y"]),  # 0.2502 / 0.2501 / 0.2
        # min_cut (sequential: the wait adds once if any op is remote):
        #   all cloud 0.01 + Q + 0.0002, after x 0.1 + Q + 0.0001, phone 0.2
        ("min_cut", 150.0, []),  # 0.1602 / 0.2501 / 0.2
        ("min_cut", 250.0, ["x", "y"]),  # 0.2602 / 0.3501 / 0.2
    ],
)
def test_static_policies_weigh_the_declared_remote_queue(policy, queued_ms, on_phone):
    placement = {"policy": policy, "device": "cpu", "node": "cloud", "remote_queued_ms": queued_ms}
    plan = plan_replicas(parse_scenario(doc(placement=placement)))["cam"][0]
    assert [op for op, uid in zip(plan.ops, plan.units, strict=True) if uid == "phone.cpu"] == (
        on_phone
    )


def test_load_factor_must_be_positive():
    with pytest.raises(ScenarioError, match=r"nodes\.cloud\.load_factor"):
        parse_scenario(doc(load_factor=0))
