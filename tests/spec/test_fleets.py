"""Fleets: a node instantiated count times, varied per member from seeded streams; its
apps and links per member; clear errors; count swept like any path."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import phone_cloud_nodes

from simulator.engine import plan_apps, simulate
from simulator.errors import ScenarioError
from simulator.placement.objectives import candidate_units
from simulator.platform import CostOracle
from simulator.spec import parse_scenario
from simulator.sweep.points import set_path

MBIT = 1e6


def fleet_doc(count: int = 4, vary: dict | None = None, **medium) -> dict:
    """``count`` phones on one shared medium (8 Mbit/s each alone) to a cloud; each phone
    sends one 1 MB input at t = 0 to an instant op in the cloud."""
    nodes = phone_cloud_nodes(1000)
    nodes["phone"]["fleet"] = {"count": count, **({"vary": vary} if vary else {})}
    return {
        "name": "fleet",
        "seed": 5,
        "nodes": nodes,
        "links": {
            "wlan": {
                "kind": "shared",
                "access_point": "cloud",
                "stations": ["phone"],
                "latency_ms": 0,
                "bandwidth_mbps": 8,
                **medium,
            }
        },
        "models": {
            "m": {
                "ops": [
                    {"name": "x", "kind": "custom", "flops": 0, "input_elems": 250_000,
                     "output_elems": 0}
                ]
            }
        },
        "workload": [
            {"app": "a", "model": "m", "source": "phone",
             "arrival": {"process": "trace", "times_ms": [0]}}
        ],
        "placement": {"policy": "offload", "node": "cloud"},
    }  # fmt: skip


def problems(doc: dict) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc)
    return [
        f"{p.path}: {p.message}" + (f" (did you mean '{p.suggestion}'?)" if p.suggestion else "")
        for p in info.value.problems
    ]


def test_members_apps_and_station_links_keep_their_identity():
    scenario = parse_scenario(fleet_doc(3))
    assert list(scenario.platform.nodes) == ["phone[0]", "phone[1]", "phone[2]", "cloud"]
    assert [e.app for e in scenario.workload] == ["a[0]", "a[1]", "a[2]"]
    assert [e.source for e in scenario.workload] == ["phone[0]", "phone[1]", "phone[2]"]
    assert sorted(scenario.platform.network.links) == [
        "wlan/phone[0]", "wlan/phone[1]", "wlan/phone[2]"
    ]  # fmt: skip
    assert scenario.fleets.members == {"phone": ("phone[0]", "phone[1]", "phone[2]")}
    assert scenario.fleets.apps["a[2]"] == ("a", "phone")


@pytest.mark.parametrize("n", [1, 3, 8])
def test_n_phones_sharing_the_medium_each_get_one_nth(n):
    # n stations each send 8 Mbit (1 MB) at t = 0 at 8 Mbit/s alone: 1/n of the airtime
    # each, so every request takes n s; with private links each would take 1 s
    result = simulate(parse_scenario(fleet_doc(n)))
    assert list(result.requests["latency_s"]) == pytest.approx([float(n)] * n, rel=1e-12)
    assert list(result.requests["source"]) == [f"phone[{i}]" for i in range(n)]
    row = result.fleets.iloc[0]
    assert (row["fleet"], row["app"], row["members"], row["completed"]) == ("phone", "a", n, n)
    assert row["latency_mean_s"] == pytest.approx(n)
    media = result.media.iloc[0]
    assert media["up_bytes"] == n * 1_000_000
    assert media["airtime_busy_s"] == pytest.approx(n)  # never idle while they send


def test_performance_anomaly_and_airtime_fairness_end_to_end():
    # phone[1] at 2 Mbit/s: equal throughput 1/(1/8 + 1/2) = 1.6 Mbit/s, both end at 5 s;
    # equal airtime: phone[0] at 4 Mbit/s ends at 2 s, phone[1] still at 5 s
    slow = {"phone[1]": {"up_mbps": 2}}
    for fairness, expected in (("throughput", [5.0, 5.0]), ("airtime", [2.0, 5.0])):
        doc = fleet_doc(2, station_rates=slow, fairness=fairness)
        result = simulate(parse_scenario(doc))
        assert list(result.requests["latency_s"]) == pytest.approx(expected, rel=1e-12)


def test_vary_draws_per_member_from_seeded_streams_independent_of_count():
    vary = {"units.cpu.peak_gflops.fp32": {"low": 1, "high": 3}}
    small = parse_scenario(fleet_doc(3, vary))
    large = parse_scenario(fleet_doc(10, vary))
    peaks = [large.platform.unit(f"phone[{i}].cpu").peak_flops["fp32"] for i in range(10)]
    assert all(1e9 <= p <= 3e9 for p in peaks)
    assert len(set(peaks)) == 10  # each member its own draw
    # member i's draw does not depend on how many members there are
    assert [small.platform.unit(f"phone[{i}].cpu").peak_flops["fp32"] for i in range(3)] == peaks[
        :3
    ]
    again = parse_scenario(fleet_doc(10, vary))
    assert peaks == [again.platform.unit(f"phone[{i}].cpu").peak_flops["fp32"] for i in range(10)]
    other = fleet_doc(10, vary)
    other["seed"] = 6
    moved = parse_scenario(other)
    assert peaks != [moved.platform.unit(f"phone[{i}].cpu").peak_flops["fp32"] for i in range(10)]


def test_vary_normal_is_truncated_to_the_field_range_and_centred():
    vary = {"units.cpu.efficiency.default": {"mean": 0.9, "sd": 0.3}}  # (0, 1]
    scenario = parse_scenario(fleet_doc(400, vary))
    effs = np.array(
        [scenario.platform.unit(f"phone[{i}].cpu").efficiency["default"] for i in range(400)]
    )
    assert effs.min() > 0 and effs.max() <= 1
    # N(0.9, 0.3) truncated to (0, 1]: mean = 0.9 + 0.3 (phi(-3) - phi(1/3)) / (Phi(1/3) - Phi(-3))
    # = 0.7222; 400 draws: standard error ~0.01
    assert effs.mean() == pytest.approx(0.7222, abs=0.02)


def test_the_resolved_document_keeps_the_fleet_and_reloads_identically():
    vary = {"units.cpu.peak_gflops.fp32": {"low": 1, "high": 3}}
    scenario = parse_scenario(fleet_doc(5, vary))
    document = copy.deepcopy(dict(scenario.document))
    assert document["nodes"]["phone"]["fleet"]["count"] == 5
    again = parse_scenario(document)
    assert again.platform.nodes == scenario.platform.nodes
    assert again.workload == scenario.workload


def test_count_is_sweepable_like_any_path():
    doc = set_path(fleet_doc(2), "nodes.phone.fleet.count", 6)
    scenario = parse_scenario(doc)
    assert len(scenario.fleets.members["phone"]) == 6
    assert len(scenario.workload) == 6


def test_point_to_point_links_with_a_fleet_end_are_one_per_member():
    doc = fleet_doc(2)
    doc["links"] = {"lte": {"ends": ["phone", "cloud"], "latency_ms": 0, "bandwidth_mbps": 8}}
    scenario = parse_scenario(doc)
    assert sorted(scenario.platform.network.links) == ["lte/phone[0]", "lte/phone[1]"]
    result = simulate(scenario)  # private links: 1 s each, no sharing
    assert list(result.requests["latency_s"]) == pytest.approx([1.0, 1.0], rel=1e-12)


def test_the_fleets_table_is_the_same_at_every_trace_level():
    # equal airtime: phone[0] and phone[1] get 8/3 Mbit/s and end at 3 s; phone[2], at
    # 1 Mbit/s alone, has sent 1 Mbit by then and its last 7 alone: 10 s
    doc = fleet_doc(3, station_rates={"phone[2]": {"up_mbps": 1}}, fairness="airtime")
    full = simulate(parse_scenario(doc), trace="full").fleets
    none = simulate(parse_scenario(doc), trace="none").fleets
    assert full.equals(none)
    row = full.iloc[0]
    assert row["member_latency_min_s"] == pytest.approx(3.0)
    assert row["member_latency_max_s"] == pytest.approx(10.0)
    assert row["latency_mean_s"] == pytest.approx(16 / 3)
    assert row["latency_p50_s"] == pytest.approx(3.0)


def _fleet(**keys):
    return lambda doc: doc["nodes"]["phone"]["fleet"].update(keys)


def _vary(path: str, dist: dict):
    return _fleet(vary={path: dist})


def _wlan(**keys):
    return lambda doc: doc["links"]["wlan"].update(keys)


UNKNOWN_CPUX = (
    "vary path 'units.cpux.peak_gflops.fp32' of fleet 'phone' is unknown: no 'cpux' in "
    "units; valid there: cpu (did you mean 'cpu'?)"
)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_fleet(count=0), "fleet.count: expected a whole number >= 1 and <= 100,000, got 0"),
        (_fleet(cuont=3), "unknown key 'cuont'"),
        (_vary("units.cpux.peak_gflops.fp32", {"low": 1, "high": 2}), UNKNOWN_CPUX),
        (_vary("units.cpu.peak_gflop", {"low": 1, "high": 2}), "no 'peak_gflop' in units.cpu"),
        (_vary("units.cpu.kind", {"low": 1, "high": 2}), "is not a number field of a node"),
        (_vary("units.cpu.idle_w", {"low": 2, "high": 1}), "high 1 is below low 2"),
        (_wlan(stations=["phnoe"]), "unknown node or fleet 'phnoe' in shared link 'wlan'"),
        (_wlan(access_point="clod"), "(did you mean 'cloud'?)"),
        (_wlan(kind="shard"), "unknown link kind 'shard'; valid: point_to_point, shared"),
        (_wlan(fairness="max_min"), "fairness"),
        (lambda doc: doc["workload"][0].update(source="phnoe"), "phnoe"),
    ],
)
def test_schema_errors_are_clear(change, expected):
    doc = fleet_doc(2)
    change(doc)
    found = problems(doc)
    assert any(expected in p for p in found), found


def test_unknown_template_preset_names_the_nearest():
    doc = fleet_doc(2)
    doc["presets"] = {"nodes": {"small_phone": doc["nodes"]["phone"]}}
    doc["nodes"]["phone"] = {"preset": "smal_phone", "fleet": {"count": 3}}
    found = problems(doc)
    assert any("smal_phone" in p and "small_phone" in p for p in found), found


def test_a_link_between_two_fleets_is_refused():
    doc = fleet_doc(2)
    doc["nodes"]["tab"] = copy.deepcopy(doc["nodes"]["phone"])
    doc["links"]["bt"] = {"ends": ["phone", "tab"], "latency_ms": 1, "bandwidth_mbps": 2}
    assert any("joins two fleets" in p for p in problems(doc))


def test_a_member_that_is_also_a_node_is_refused():
    doc = fleet_doc(2)
    doc["nodes"]["phone[1]"] = copy.deepcopy(phone_cloud_nodes()["phone"])
    assert any("'phone[1]' is also a node" in p for p in problems(doc))


# -- members are private: other nodes' policies do not choose their units -----------------
def _heft_doc(count: int, **template) -> dict:
    doc = fleet_doc(count)
    doc["nodes"]["phone"].update(template)
    doc["placement"] = {"policy": "heft"}
    return doc


def _candidate_nodes(scenario, source: str, **options) -> list[str]:
    oracle = CostOracle(scenario.platform)
    units = candidate_units(oracle, source, options, "heft")
    return sorted({scenario.platform.node_of(u).name for u in units})


def test_members_are_private_so_a_policy_chooses_among_its_own_node_and_the_rest():
    scenario = parse_scenario(_heft_doc(3))
    assert [n.private for n in scenario.platform.nodes.values()] == [True, True, True, False]
    # every member reaches every other through the access point, yet none is a candidate
    assert scenario.platform.network.reachable("phone[0]") == set(scenario.platform.nodes)
    assert _candidate_nodes(scenario, "phone[1]") == ["cloud", "phone[1]"]
    # the cloud's own apps do not choose a member's units either
    assert _candidate_nodes(scenario, "cloud") == ["cloud"]
    # a unit an option names may be on a private node (checks of named units)
    oracle = CostOracle(scenario.platform)
    named = candidate_units(oracle, "phone[0]", {}, "heft", named=True)
    assert "phone[2].cpu" in named


def test_a_fleet_that_says_private_false_lets_members_help_each_other():
    scenario = parse_scenario(_heft_doc(3, private=False))
    assert not any(n.private for n in scenario.platform.nodes.values())
    assert _candidate_nodes(scenario, "phone[1]") == ["cloud", "phone[0]", "phone[1]", "phone[2]"]


def test_a_private_node_outside_a_fleet_and_a_wrong_value():
    doc = fleet_doc(1)
    doc["nodes"]["cloud"]["private"] = True
    scenario = parse_scenario(doc)
    assert _candidate_nodes(scenario, "phone[0]") == ["phone[0]"]
    doc["nodes"]["cloud"]["private"] = "yes"
    assert any("nodes.cloud.private" in p for p in problems(doc))


def test_a_split_from_a_member_defaults_its_remote_side_to_the_one_shared_node():
    # other members are private: the cloud is the only node a split can default to
    doc = fleet_doc(3)
    doc["placement"] = {"policy": "split_point"}
    plans = plan_apps(parse_scenario(doc))
    for app, plan in plans.items():
        member = app[app.index("[") :]
        units = set(plan.placement.assignment.values())
        assert units <= {f"phone{member}.cpu", "cloud.gpu"}, (app, units)


def test_an_unknown_unit_in_a_fleet_placement_is_one_short_problem_per_fleet():
    doc = fleet_doc(50)
    doc["placement"] = {"policy": "split_point", "remote": "phone[3].npu"}
    (problem,) = problems(doc)  # not one per member, and not 51 units long
    assert problem == (
        "placement.remote: unknown unit 'phone[3].npu' for the apps of fleet 'phone'; "
        "units: phone[i].cpu, cloud.gpu (did you mean 'phone[3].cpu'?)"
    )
    doc["placement"] = {"policy": "offload", "node": "clod"}
    (problem,) = problems(doc)
    assert problem == (
        "placement.node: unknown node 'clod'; nodes: phone[0..49], cloud (did you mean 'cloud'?)"
    )


def test_a_mistake_in_a_fleet_entry_is_one_problem_at_the_entry_written():
    doc = fleet_doc(40)
    doc["nodes"]["cloud2"] = copy.deepcopy(doc["nodes"]["cloud"])
    doc["workload"].insert(0, copy.deepcopy(doc["workload"][0]))
    doc["workload"][0].update(app="b", source="cloud2")  # no fleet: index 0 as written
    doc["workload"][1]["arrival"] = {"process": "poisson", "rate_hz": -1}
    doc["workload"][1]["placement"] = {"policy": "heft", "bogus": 1}
    doc["workload"][0]["placement"] = {"policy": "heft", "bogus": 2}
    assert problems(doc) == [
        "workload[0].placement.bogus: unknown key 'bogus' in heft placement; valid keys: "
        "exact, online, objective, weights, deadline_ms, exclude, check_memory",
        "workload[1].arrival.rate_hz: expected a number >= 2.5e-07 and <= 1e+09 (Hz), got -1",
        "workload[1].placement.bogus: unknown key 'bogus' in heft placement; valid keys: "
        "exact, online, objective, weights, deadline_ms, exclude, check_memory",
    ]
