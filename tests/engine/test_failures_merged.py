"""Failures with the features merged beside them: fleets (a member is a failure target)
and run-time schedulers (rejected with failures, clearly)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from conftest import build, phone_cloud_document

from simulator.engine import simulate
from simulator.errors import PlacementError, ScenarioError, SimulationError
from simulator.spec import parse_scenario

ROOT = Path(__file__).resolve().parents[2]


def _fleet_doc(failures: list[dict]) -> dict:
    doc = phone_cloud_document()
    doc["nodes"]["phone"]["fleet"] = {"count": 2}  # phone[0], phone[1]; apps app[0], app[1]
    doc["workload"][0]["count"] = 2
    doc["failures"] = failures
    return doc


def test_a_fleet_member_fails_by_its_member_name_and_only_it_waits():
    # both members send at t = 0; phone[1] is down 0.5 .. 1.5 s: its uplink has an
    # outage then (the link outage rule), so its upload pauses for exactly 1 s
    doc = _fleet_doc([{"target": "phone[1]", "at_s": 0.5, "for_s": 1.0}])
    result = simulate(build(doc))
    req = result.requests.set_index("request_id")
    alone_s = req.loc[0, "finish_s"]  # phone[0]'s first request, untouched
    assert req.loc[0, "app"] == "app[0]" and req.loc[1, "app"] == "app[1]"
    assert req.loc[1, "finish_s"] == pytest.approx(alone_s + 1.0, abs=1e-12)
    rows = result.failures
    assert list(rows["unit"]) == ["phone[1].cpu"]
    assert (rows.iloc[0]["start_s"], rows.iloc[0]["end_s"]) == (0.5, 1.5)


def test_an_unknown_member_names_the_fleet_compactly_and_the_nearest_member():
    doc = _fleet_doc([{"target": "phone[5]", "at_s": 0.5, "for_s": 1.0}])
    with pytest.raises(ScenarioError) as info:
        build(doc)
    message = str(info.value)
    assert "failures[0].target" in message
    assert "phone[0..1]" in message and "phone[i].cpu" in message
    assert "did you mean 'phone[1]'" in message


def test_a_run_time_policy_with_failures_is_a_clear_placement_error():
    doc = phone_cloud_document()
    doc["placement"] = {"policy": "met"}
    doc["failures"] = [{"target": "cloud", "at_s": 0.5, "for_s": 1.0}]
    with pytest.raises(PlacementError, match="run-time policy cannot be combined with failures"):
        simulate(build(doc))


def test_a_failing_unit_run_as_a_core_pool_is_a_clear_placement_error():
    from simulator.spec import load_scenario, parse_scenario

    shipped = load_scenario(str(ROOT / "scenarios" / "examples" / "inception_branches.yaml"))
    doc = copy.deepcopy(shipped.document)  # its cpu runs as a pool (per-op cores)
    doc["failures"] = [{"target": "phone.cpu", "at_s": 0.001, "for_s": 0.01}]
    with pytest.raises(PlacementError, match=r"unit 'phone\.cpu' fails but a placement runs it"):
        simulate(parse_scenario(doc))


def test_a_failing_node_on_a_shared_medium_is_a_clear_error():
    from simulator.errors import SocsimError
    from simulator.spec import load_scenario, parse_scenario

    shipped = load_scenario(str(ROOT / "scenarios" / "examples" / "fleet_edge_wifi.yaml"))
    doc = copy.deepcopy(shipped.document)
    doc["failures"] = [{"target": "phone[3]", "at_s": 1.0, "for_s": 1.0}]
    with pytest.raises(SocsimError, match="on shared medium 'wlan'"):
        simulate(parse_scenario(doc))


def test_a_closed_loop_dropped_at_once_is_a_clear_error_not_a_spin(monkeypatch):
    """A closed loop with no think time on a unit that is down, on_failure drop: each
    request is dropped the moment it is issued and issued again at once. The run used to
    stop at MAX_REQUESTS ("lower count or duration_s"), which said nothing of why."""
    from conftest import one_op_document

    import simulator.engine.arrivals as arrivals

    monkeypatch.setattr(arrivals, "MAX_SAME_INSTANT_REQUESTS", 1000)
    doc = one_op_document(
        "spin",
        {"policy": "single", "unit": "cpu"},
        {"process": "closed_loop", "concurrency": 1},
        duration_s=1.0,
        on_failure="drop",
    )
    doc["failures"] = [{"target": "phone.cpu", "at_s": 0.3, "for_s": 0.4}]
    with pytest.raises(SimulationError, match=r"more than 1,000 requests issued at t = 0.3 s"):
        simulate(parse_scenario(doc))
    doc["workload"][0]["arrival"]["think_ms"] = 50  # time passes between two drops
    requests = simulate(parse_scenario(doc)).requests
    dropped = requests[requests["status"] == "dropped"]
    assert 7 <= len(dropped) <= 9  # one per 50 ms of the 0.4 s outage
    assert dropped["drop_reason"].str.contains("unit 'phone.cpu' down").all()
