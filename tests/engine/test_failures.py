"""Failures of nodes and units: hand-computed retries, parks and drops (docs/failures.md).

The scenario is ``phone_cloud_document`` (tests/conftest.py) with two replicas: the
cloud (replica 0) and the phone's cpu (replica 1), round robin. Hand numbers:

* cloud replica: upload 250,000 fp32 = 1e6 B × 8 / 10 Mbit/s = 0.8 s, + 20 ms latency
  → the gpu op starts at 0.82 s and takes 1e9 / 1e12 = 1 ms; the 1,000-element output
  returns in 4,000 × 8 / 20 Mbit/s = 1.6 ms + 20 ms: 842.6 ms in all;
* phone replica: 1e9 FLOPs at 1 GFLOP/s = 1 s.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import build, phone_cloud_document

from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.failures import FailureSpec, down_intervals, is_down, merge

CLOUD_S = 0.8 + 0.02 + 0.001 + 0.0016 + 0.02  # a request on the cloud replica, alone
PHONE_S = 1.0


def replicated(count: int = 3, on_failure: str = "retry", failures=()) -> dict:
    doc = phone_cloud_document()
    doc.pop("placement")
    app = doc["workload"][0]
    app.update(
        count=count,
        on_failure=on_failure,
        replicas=[
            {"policy": "offload", "node": "cloud"},
            {"policy": "manual", "rules": [], "default": "phone.cpu"},
        ],
    )
    doc["failures"] = list(failures)
    return doc


def test_a_request_whose_op_is_cut_is_retried_on_the_phone_at_a_hand_computed_time():
    # the gpu op of request 0 runs 0.82 .. 0.821 s; the gpu fails at 0.8205 s
    doc = replicated(failures=[{"target": "cloud.gpu", "at_s": 0.8205, "for_s": 1.0}])
    result = simulate(build(doc))
    req = result.requests.set_index("request_id")
    assert req.loc[0, "status"] == "completed"
    assert req.loc[0, "replica"] == 1  # the phone's
    assert req.loc[0, "finish_s"] == pytest.approx(0.8205 + PHONE_S, abs=1e-12)
    assert req.loc[2, "finish_s"] == pytest.approx(4.0 + CLOUD_S, abs=1e-12)  # recovered
    row = result.failures.iloc[0]
    assert (row["unit"], row["start_s"], row["end_s"]) == ("cloud.gpu", 0.8205, 1.8205)
    assert (row["ops_cut"], row["requests_hit"], row["retried"], row["dropped"]) == (1, 1, 1, 0)
    assert row["request_ids"] == "0"
    # the cut op is not in the trace; request 0's only op ran on the phone
    ops = result.ops
    assert list(ops[ops["request_id"] == 0]["unit"]) == ["phone.cpu"]
    # energy: the gpu drew 50 W for 0.5 ms of the cut op and nothing while down
    units = result.units.set_index("unit")
    window_s = 4.0 + CLOUD_S
    busy_s = 0.001 + 0.0005
    assert units.loc["cloud.gpu", "busy_s"] == pytest.approx(busy_s, abs=1e-15)
    assert units.loc["cloud.gpu", "idle_energy_j"] == pytest.approx(
        10 * (window_s - 1.0 - busy_s), rel=1e-12
    )
    assert units.loc["cloud.gpu", "active_energy_j"] == pytest.approx(50 * busy_s, rel=1e-12)
    power = result.power[result.power["component"] == "cloud.gpu"]
    down = power[(power["start_s"] >= 0.8205) & (power["end_s"] <= 1.8205)]
    assert list(down["power_w"]) == [0.0]
    assert power["energy_j"].sum() == pytest.approx(units.loc["cloud.gpu", "energy_j"], rel=1e-12)


def test_wait_parks_a_request_until_its_node_recovers():
    # the cloud node fails at 0.3 s during request 0's upload: the link goes down with it
    doc = replicated(on_failure="wait", failures=[{"target": "cloud", "at_s": 0.3, "for_s": 1.5}])
    result = simulate(build(doc))
    req = result.requests.set_index("request_id")
    assert req.loc[0, "replica"] == 0
    assert req.loc[0, "finish_s"] == pytest.approx(1.8 + CLOUD_S, abs=1e-12)
    assert req.loc[1, "finish_s"] == pytest.approx(2.0 + PHONE_S, abs=1e-12)
    row = result.failures.iloc[0]
    assert (row["requests_hit"], row["retried"], row["parked"]) == (1, 0, 1)
    # the upload restarted from its first byte at 1.8 s
    hops = result.transfers[(result.transfers["request_id"] == 0)]
    assert hops["start_s"].min() == pytest.approx(1.8, abs=1e-12)


def test_drop_gives_the_reason_and_arrivals_while_down_are_dropped_too():
    doc = replicated(
        count=2, on_failure="drop", failures=[{"target": "cloud.gpu", "at_s": 0.3, "for_s": 3.0}]
    )
    doc["workload"][0]["dispatch"] = "round_robin"
    doc["workload"][0]["replicas"].reverse()  # request 0 on the phone, 1 on the cloud
    result = simulate(build(doc))
    req = result.requests.set_index("request_id")
    assert req.loc[0, "status"] == "completed"
    assert req.loc[0, "finish_s"] == pytest.approx(PHONE_S, abs=1e-12)
    # request 1 arrives at 2 s, its replica down since 0.3 s: dropped with the reason
    assert req.loc[1, "status"] == "dropped"
    assert req.loc[1, "drop_reason"] == "unit 'cloud.gpu' down from 0.3 s (on_failure: drop)"
    assert result.failures.iloc[0]["dropped"] == 1
    assert result.summary["dropped"] == 1


def test_retry_routes_an_arrival_to_the_replica_that_is_up():
    doc = replicated(count=1, failures=[{"target": "cloud", "at_s": 0.0, "for_s": 5.0}])
    result = simulate(build(doc))
    req = result.requests.iloc[0]
    assert req["replica"] == 1 and req["finish_s"] == pytest.approx(PHONE_S, abs=1e-12)


def test_no_replica_up_parks_the_request_under_retry():
    doc = replicated(
        count=1,
        failures=[
            {"target": "cloud", "at_s": 0.0, "for_s": 5.0},
            {"target": "phone.cpu", "at_s": 0.0, "for_s": 2.0},
        ],
    )
    result = simulate(build(doc))
    assert result.requests.iloc[0]["finish_s"] == pytest.approx(2.0 + PHONE_S, abs=1e-12)


def test_failure_schema_errors_name_the_path_and_the_fix():
    doc = replicated(failures=[{"target": "clod", "at_s": 1, "for_s": 1}])
    with pytest.raises(ScenarioError, match=r"failures\[0\]\.target.*did you mean 'cloud'"):
        build(doc)
    doc["failures"] = [{"target": "cloud", "at_s": 1}]
    with pytest.raises(ScenarioError, match=r"failures\[0\]: a failure gives at_s with for_s"):
        build(doc)
    doc["failures"] = [{"target": "cloud", "at_s": 1, "mtbf_s": 3, "for_s": 1}]
    with pytest.raises(ScenarioError, match="give exactly one of at_s, mtbf_s"):
        build(doc)
    doc["failures"] = [{"target": "cloud", "at_s": 1, "for_s": 1}]
    doc["workload"][0]["on_failure"] = "retyr"
    with pytest.raises(ScenarioError, match=r"on_failure.*retry"):
        build(doc)


def test_mtbf_intervals_are_exponential_draws_of_their_own_stream():
    spec = FailureSpec("cloud", mtbf_s=2.0, mttr_s=0.5, until_s=30.0)
    units, nodes = down_intervals([spec], {"cloud": ("cloud.gpu",)}, seed=7, replicate=1)
    rng = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(0x46A1, 1, 0)))
    expected, t = [], 0.0
    while (t := t + rng.exponential(2.0)) <= 30.0:
        down = rng.exponential(0.5)
        expected.append((t, t + down))
        t += down
    assert nodes["cloud"] == units["cloud.gpu"] == merge(expected)
    again, _ = down_intervals([spec], {"cloud": ("cloud.gpu",)}, seed=7, replicate=1)
    other, _ = down_intervals([spec], {"cloud": ("cloud.gpu",)}, seed=7, replicate=2)
    assert again == units and other != units


def test_merge_and_is_down():
    spans = merge([(3.0, 4.0), (0.0, 1.0), (0.5, 2.0), (2.0, 2.5)])
    assert spans == ((0.0, 2.5), (3.0, 4.0))
    assert is_down(spans, 0.0) and is_down(spans, 2.49) and not is_down(spans, 2.5)
    assert not is_down(spans, -1.0) and is_down(spans, 3.0) and not is_down(spans, 4.0)


def test_same_seed_same_tables_with_drawn_failures():
    doc = replicated(
        count=20, failures=[{"target": "cloud", "mtbf_s": 1, "mttr_s": 0.5, "until_s": 40}]
    )
    a, b = simulate(build(doc)), simulate(build(copy.deepcopy(doc)))
    for name in ("requests", "ops", "failures", "units", "power"):
        assert getattr(a, name).equals(getattr(b, name)), name
    assert len(a.failures) > 5


def test_a_down_unit_leaves_its_node_battery_alone():
    # one request to the cloud; the phone's cpu (0.1 W idle, never busy) is down 0 .. 0.5 s:
    # the battery and the energy table both drop by 0.1 W x 0.5 s = 0.05 J
    def phone_energy(failures):
        doc = phone_cloud_document()
        doc["nodes"]["phone"]["battery_wh"] = 1.0
        doc["failures"] = failures
        result = simulate(build(doc))
        energy = result.energy
        used = result.batteries.iloc[0]["used_j"]
        assert used == pytest.approx(energy[energy["node"] == "phone"]["energy_j"].sum(), rel=1e-12)
        return used

    up = phone_energy([])
    down = phone_energy([{"target": "phone.cpu", "at_s": 0.0, "for_s": 0.5}])
    assert up - down == pytest.approx(0.1 * 0.5, rel=1e-9)
