"""Adaptive offloading: per-request decisions from observed links, timeouts, fallback.

Hand numbers: the phone cpu runs the one op (0.1 GFLOP at 1 GFLOP/s) in 0.1 s, the cloud
gpu in 0.1 ms; the 1 MB input is 8 Mbit, 10 ms at 800 Mbit/s and 1 s at 8 Mbit/s; the
link has no latency and the output is empty. So offloading takes 10.1 ms on the fast
link and 1.0001 s on the slow one, against 100 ms on the phone.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from conftest import phone_cloud_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine import Engine, plan_replicas, simulate
from simulator.engine.offload import LinkMonitor
from simulator.errors import PlacementError, ScenarioError
from simulator.placement.estimate import Conditions, estimate
from simulator.platform import CostOracle
from simulator.scheduling import ewma
from simulator.spec import parse_scenario

EXACT = 1e-9
LOCAL_S, FAST_S, SLOW_S = 0.1, 0.0101, 1.0001


def adaptive_doc(times_s, link=None, adaptive=None, timeout_ms=None) -> dict:
    doc = {
        "name": "adaptive",
        "seed": 3,
        "nodes": phone_cloud_nodes(),
        "links": {
            "up": {
                "ends": ["phone", "cloud"],
                "latency_ms": 0,
                "bandwidth_mbps": 800,
                "reverse_bandwidth_mbps": 800,
                **(link or {}),
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "conv",
                        "flops": 1e8,
                        "input_elems": 250_000,
                        "output_elems": 0,
                    }
                ]
            }
        },
        "workload": [
            {
                "app": "cam",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [t * 1e3 for t in times_s]},
                "replicas": [
                    {"policy": "single", "unit": "cpu"},
                    {"policy": "offload", "node": "cloud"},
                ],
                "dispatch": "adaptive",
                "adaptive": {"ewma_alpha": 1.0, "stale_ms": 1e6, **(adaptive or {})},
                **({"transfer_timeout_ms": timeout_ms} if timeout_ms else {}),
            }
        ],
    }
    doc["nodes"]["phone"]["units"]["cpu"]["active_w"] = 2
    return doc


def decisions(result):
    requests = result.requests.sort_values("request_id")
    return list(requests["decision"]), list(requests["latency_s"])


def test_decisions_follow_the_observed_bandwidth():
    # fast until 1 s, then 8 Mbit/s: the request at 1 s still trusts its last sample
    # (800 Mbit/s) and pays the slow upload; that sample (8 Mbit/s) keeps the next on the phone
    doc = adaptive_doc([0, 0.5, 1.0, 3.0, 3.5], {"bandwidth_trace_mbps": [[0, 800], [1, 8]]})
    chosen, latency = decisions(simulate(parse_scenario(doc)))
    assert chosen == ["cloud", "cloud", "cloud", "device", "device"]
    assert latency == pytest.approx([FAST_S, FAST_S, SLOW_S, LOCAL_S, LOCAL_S], rel=EXACT)


def test_a_transfer_in_progress_is_observed_before_it_ends():
    # at 1.5 s the request of 1 s is still uploading at 8 Mbit/s: the phone is chosen
    doc = adaptive_doc([0, 1.0, 1.5], {"bandwidth_trace_mbps": [[0, 800], [1, 8]]})
    chosen, latency = decisions(simulate(parse_scenario(doc)))
    assert chosen == ["cloud", "cloud", "device"]
    assert latency == pytest.approx([FAST_S, SLOW_S, LOCAL_S], rel=EXACT)


def test_a_timeout_falls_back_to_the_phone_through_an_outage():
    # down from 1 s to 5 s; the upload of 1 s gives up at 1.2 s and the phone redoes the
    # frame by 1.3 s; the zero sample keeps the next frame local; at 7 s the estimate is
    # stale (1 s) and the link is probed again at its nominal bandwidth
    doc = adaptive_doc(
        [0, 1.0, 1.5, 7.0],
        {"outages_s": [[1.0, 5.0]]},
        {"stale_ms": 1000},
        timeout_ms=200,
    )
    result = simulate(parse_scenario(doc))
    chosen, latency = decisions(result)
    assert chosen == ["cloud", "device", "device", "cloud"]
    assert latency == pytest.approx([FAST_S, 0.2 + LOCAL_S, LOCAL_S, FAST_S], rel=EXACT)
    assert list(result.requests.sort_values("request_id")["fell_back"]) == [
        False,
        True,
        False,
        False,
    ]
    network = result.transfers[result.transfers["kind"] == "network"]
    assert not ((network["end_s"] > 1.0) & (network["end_s"] < 5.0)).any()
    # the abandoned upload leaves no transfer row: three network hops for two offloads x 2
    assert len(network) == 4


def test_without_a_timeout_the_request_waits_for_the_link():
    doc = adaptive_doc([0, 1.0], {"outages_s": [[1.0, 5.0]]})
    chosen, latency = decisions(simulate(parse_scenario(doc)))
    assert chosen == ["cloud", "cloud"]
    assert latency == pytest.approx([FAST_S, 4.0 + FAST_S], rel=EXACT)


def test_the_server_queue_counts_in_the_prediction():
    # a second app floods the cloud gpu with 5 s of queued work at t = 0
    doc = adaptive_doc([0.0])
    doc["models"]["big"] = {
        "ops": [{"name": "y", "kind": "conv", "flops": 5e12, "output_elems": 0}]
    }
    doc["workload"].insert(
        0,
        {
            "app": "batch",
            "model": "big",
            "source": "cloud",
            "arrival": {"process": "trace", "times_ms": [0, 0]},
            "placement": {"policy": "single", "unit": "cloud.gpu"},
        },
    )
    result = simulate(parse_scenario(doc))
    cam = result.requests[result.requests["app"] == "cam"]
    assert list(cam["decision"]) == ["device"]  # 5 s queued on the gpu beats 10 ms upload


def test_timeouts_release_memory_and_radios():
    doc = adaptive_doc(
        [0, 1.0, 1.1, 1.2], {"outages_s": [[1.0, 5.0]]}, {"stale_ms": 50}, timeout_ms=200
    )
    doc["links"]["up"]["radio"] = {"model": "constant", "tx_w": 1.0, "rx_w": 0.5}
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    record = Engine(scenario, plan_replicas(scenario, oracle), oracle).run()
    assert all(r.finish_s is not None for r in record.requests.records())
    assert record.ledger.memory_now == record.ledger.weights  # every buffer freed
    assert all(radio.reserved == 0 for radio in record.radios)
    assert all(not channel.flows for channel in record.links.values())


@settings(max_examples=40, deadline=None)
@given(
    times=st.lists(st.floats(0, 6), min_size=1, max_size=12).map(sorted),
    outage=st.tuples(st.floats(0, 5), st.floats(0.05, 3)),
    timeout_ms=st.floats(5, 500),
    alpha=st.floats(0.1, 1.0),
    stale_ms=st.floats(10, 5000),
)
def test_adaptive_runs_complete_and_respect_outages(times, outage, timeout_ms, alpha, stale_ms):
    start, length = outage
    doc = adaptive_doc(
        times,
        {"outages_s": [[start, start + length]], "bandwidth_trace_mbps": [[0, 800], [2, 8]]},
        {"ewma_alpha": alpha, "stale_ms": stale_ms},
        timeout_ms=timeout_ms,
    )
    result = simulate(parse_scenario(doc))
    requests = result.requests
    assert (requests["status"] == "completed").all()
    assert (requests["latency_s"] >= FAST_S * (1 - EXACT)).all()
    # a fallback is only ever to the phone, after at least the timeout
    fell = requests[requests["fell_back"]]
    assert (fell["decision"] == "device").all()
    assert (fell["latency_s"] >= timeout_ms * 1e-3 + LOCAL_S - 1e-9).all()
    network = result.transfers[result.transfers["kind"] == "network"]
    inside = (network["end_s"] > start) & (network["end_s"] < start + length)
    assert not inside.any()
    again = simulate(parse_scenario(doc))
    assert again.requests.equals(requests)  # deterministic


def static_offload(doc: dict) -> dict:
    entry = doc["workload"][0]
    for key in ("replicas", "dispatch", "adaptive"):
        del entry[key]
    entry["placement"] = {"policy": "offload", "node": "cloud"}
    return doc


def test_a_static_app_drops_a_request_whose_hop_times_out():
    doc = static_offload(adaptive_doc([0, 1.0, 6.0], {"outages_s": [[1.0, 5.0]]}, timeout_ms=200))
    requests = simulate(parse_scenario(doc)).requests.sort_values("request_id")
    assert list(requests["status"]) == ["completed", "dropped", "completed"]
    assert requests["drop_reason"].iloc[1] == (
        "a hop on link 'up' from 'phone' was unfinished after 200 ms"
    )
    assert requests["latency_s"].iloc[[0, 2]].tolist() == pytest.approx([FAST_S, FAST_S])


def test_a_closed_loop_goes_on_after_a_drop():
    doc = static_offload(adaptive_doc([0], {"outages_s": [[0.5, 0.8]]}, timeout_ms=100))
    doc["workload"][0]["arrival"] = {"process": "closed_loop", "think_ms": 190}
    doc["workload"][0]["count"] = 5
    # requests at 0, 0.2001, 0.4002 complete in 10.1 ms each; the one at 0.6003 waits out
    # the outage's first 100 ms and is dropped at 0.7003; the next comes 190 ms later
    requests = simulate(parse_scenario(doc)).requests.sort_values("request_id")
    assert list(requests["status"]) == ["completed"] * 3 + ["dropped", "completed"]
    assert requests["arrival_s"].tolist() == pytest.approx(
        [0, 0.2001, 0.4002, 0.6003, 0.8903], rel=EXACT
    )


# -- the pure parts ----------------------------------------------------------------------------
def test_ewma_and_the_monitor_by_hand():
    assert ewma(None, 8.0, 0.25) == 8.0
    assert ewma(8.0, 4.0, 0.25) == 0.25 * 4.0 + 0.75 * 8.0
    monitor = LinkMonitor(alpha=0.5, stale_s=2.0)
    monitor.sample(("up", "phone"), 100.0, 0.0)
    monitor.sample(("up", "phone"), 50.0, 1.0)
    assert monitor.view(1.0) == {("up", "phone"): 75.0}
    assert monitor.view(3.0) == {("up", "phone"): 75.0}
    assert monitor.view(3.01) == {}  # stale: nominal again
    monitor.sample(("up", "phone"), 10.0, 4.0)  # a stale estimate does not weigh in
    assert monitor.view(4.0) == {("up", "phone"): 10.0}


def test_estimate_under_observed_conditions_by_hand():
    scenario = parse_scenario(adaptive_doc([0]))
    oracle = CostOracle(scenario.platform)
    cloud = plan_replicas(scenario, oracle)["cam"][1]
    assert estimate(cloud, oracle).latency_s == pytest.approx(FAST_S, rel=EXACT)
    slow = Conditions(bandwidth_bps={("up", "phone"): 8e6})
    assert estimate(cloud, oracle, slow).latency_s == pytest.approx(SLOW_S, rel=EXACT)
    queued = Conditions(unit_free_s={"cloud.gpu": 2.0})
    assert estimate(cloud, oracle, queued).latency_s == pytest.approx(2.0001, rel=EXACT)
    down = Conditions(bandwidth_bps={("up", "phone"): 0.0})
    assert estimate(cloud, oracle, down).latency_s == float("inf")


def test_estimate_follows_a_radio_met_in_its_tail():
    # the 3g preset: 2 s promotion from idle; 4 s DCH tail then FACH, whose promotion is 1.5 s
    doc = adaptive_doc([0], {"preset": "3g", "latency_ms": 0, "bandwidth_mbps": 800})
    doc["include"] = [str(Path("scenarios/networks/3g.yaml").resolve())]
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    cloud = plan_replicas(scenario, oracle)["cam"][1]
    key = ("up", "phone")
    idle = estimate(cloud, oracle).latency_s
    in_dch = estimate(cloud, oracle, Conditions(radio_tail_s={key: 1.0})).latency_s
    in_fach = estimate(cloud, oracle, Conditions(radio_tail_s={key: 5.0})).latency_s
    busy = estimate(cloud, oracle, Conditions(radio_tail_s={key: -math.inf})).latency_s
    assert (idle - busy, in_fach - busy, in_dch - busy) == pytest.approx((2.0, 1.5, 0.0))


def test_estimate_refuses_a_radio_tail_on_a_link_without_a_radio():
    scenario = parse_scenario(adaptive_doc([0]))  # the link 'up' has no radio model
    oracle = CostOracle(scenario.platform)
    cloud = plan_replicas(scenario, oracle)["cam"][1]
    with pytest.raises(ValueError, match="link 'up', which has no radio"):
        estimate(cloud, oracle, Conditions(radio_tail_s={("up", "phone"): 1.0}))


# -- bad input ---------------------------------------------------------------------------------
def problems(doc) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc)
    return [f"{p.path}: {p.message}" for p in info.value.problems]


def test_adaptive_options_need_adaptive_dispatch():
    doc = adaptive_doc([0])
    doc["workload"][0]["dispatch"] = "jsq"
    (problem,) = problems(doc)
    assert problem.startswith("workload[0].adaptive:") and "dispatch: adaptive" in problem


def test_adaptive_dispatch_needs_two_candidates():
    doc = adaptive_doc([0])
    doc["workload"][0]["replicas"] = doc["workload"][0]["replicas"][:1]
    (problem,) = problems(doc)
    assert problem.startswith("workload[0].dispatch:") and "at least two" in problem


def test_fallback_must_name_a_replica():
    doc = adaptive_doc([0], adaptive={"fallback": 2}, timeout_ms=10)
    (problem,) = problems(doc)
    assert problem.startswith("workload[0].adaptive.fallback:") and "0..1" in problem


def test_a_timeout_needs_something_local_to_fall_back_to():
    doc = copy.deepcopy(adaptive_doc([0], timeout_ms=10))
    doc["workload"][0]["replicas"][0] = {"policy": "offload", "node": "cloud"}
    with pytest.raises(PlacementError, match=r"adaptive\.fallback"):
        simulate(parse_scenario(doc))


def test_cut_names_an_op_of_the_model():
    doc = adaptive_doc([0])
    doc["workload"][0]["replicas"][1] = {"policy": "cut", "after": "xx", "node": "cloud"}
    with pytest.raises(PlacementError, match="did you mean 'x'"):
        simulate(parse_scenario(doc))


def test_an_adaptive_decision_beside_a_run_time_app_reads_only_decided_ops():
    """The shipped loaded cloud with its tenants placed by etf: an adaptive decision adds
    up the units' committed work, and a run-time app's op that is not ready yet has no
    unit. That used to fail the run (AttributeError: 'NoneType' object has no attribute
    'uid') at the camera's first decision after the tenants began."""
    import yaml

    examples = Path("scenarios/examples")
    doc = yaml.safe_load((examples / "loaded_cloud.yaml").read_text())
    tenants = doc["workload"][1]
    tenants["placement"] = {"policy": "etf"}
    tenants["arrival"] = {"process": "closed_loop", "concurrency": 2}
    for entry in doc["workload"]:
        entry["duration_s"] = 1
    requests = simulate(parse_scenario(doc, base_dir=examples)).requests
    assert (requests["status"] == "completed").all()
    camera = requests[requests["app"] == "camera"]
    assert len(camera) == 3  # 2 Hz for 1 s, the last one issued at 1.0 s
    assert (requests["app"] == "tenants").sum() > 100  # 298 measured: two in flight at a time
