"""Online HEFT: each request planned at its arrival into the units' reservations.

The published case: Topcuoglu et al. 2002's Fig. 2 graph (HEFT's schedule of one copy
ends at 80) with a second copy released at t = 10. Scheduled into the first copy's
reservations by HEFT's insertion rule, the second copy ends at 109; the engine's
per-unit queueing gives 137 (fcfs) or 122 (ready_order) for the same placements.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import simulate
from simulator.errors import PlacementError, ScenarioError
from simulator.placement.check import plan_problems
from simulator.placement.online import OnlineHeft
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXAMPLE = Path("scenarios/examples/heft_topcuoglu.yaml")
ONLINE = {"policy": "heft", "online": True}


def topcuoglu(times_ms, placement=None, scheduler="fcfs", edit=None):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["placement"] = placement or ONLINE
    doc["scheduler"] = scheduler
    doc["workload"][0]["arrival"] = {"process": "trace", "times_ms": list(times_ms)}
    if edit is not None:
        edit(doc)
    return parse_scenario(doc, base_dir=EXAMPLE.parent)


# The second copy (released at 10), planned by hand with HEFT's rule into the first
# copy's schedule (Fig. 4a: p1 t2 27-40, t8 57-62; p2 t4 18-26, t6 26-42, t9 56-68,
# t10 73-80; p3 t1 0-9, t3 9-28, t5 28-38, t7 38-49). Same rank order (t1 t3 t4 t2 t5 t6
# t9 t7 t8 t10); for each op, its finish on p1 / p2 / p3 (ready = preds' finish + comm
# when on another unit; start = first gap from ready that holds it):
#   t1:  p1 gap 0-27 from 10 holds 14 -> 24;  p2 gaps 10-18, 42-56 < 16 -> 80+16 = 96;
#        p3 busy to 49 -> 58                                                   => p1 10-24
#   t3:  p1 ready 24, gap 24-27 < 11, gap 40-57 -> 51;  p2 ready 36, gap 42-56 -> 55;
#        p3 49 -> 68                                                           => p1 40-51
#   t4:  p1 ready 24, gaps 3 and 6 < 13 -> 62+13 = 75;  p2 ready 33, gap 42-56 -> 50;
#        p3 49 -> 66                                                           => p2 42-50
#   t2:  p1 ready 24 -> 75;  p2 ready 42, gaps 50-56, 68-73 < 19 -> 99;  p3 ready 42,
#        49 -> 67                                                              => p3 49-67
#   t5:  p1 ready 24 -> 62-74;  p2 ready 35 -> 80+13 = 93;  p3 ready 35 -> 67+10 = 77
#                                                                              => p1 62-74
#   t6:  p1 -> 74+13 = 87;  p2 -> 96;  p3 ready 38 -> 67+9 = 76               => p3 67-76
#   t9:  preds t2 (p3, 67), t4 (p2, 50), t5 (p1, 74). p1 ready max(67+16, 50+23, 74) = 83
#        -> 101; p2 ready max(83, 50, 74+13) = 87 -> 99; p3 ready 87 -> 107  => p2 87-99
#   t7:  pred t3 (p1, 51). p1 ready 51, gap 51-57 < 7 -> 74+7 = 81; p2 ready 74, gap
#        80-87 < 15 -> 114; p3 ready 74 -> 76+11 = 87                        => p1 74-81
#   t8:  preds t2 (p3, 67), t4 (p2, 50), t6 (p3, 76). p1 ready max(86, 77, 91) = 91 -> 96;
#        p2 ready 91 -> 99+11 = 110; p3 ready max(67, 77, 76) = 77 -> 91     => p3 77-91
#   t10: preds t7 (p1, 81), t8 (p3, 91), t9 (p2, 99). p1 ready max(81, 102, 112) -> 133;
#        p2 ready max(98, 102, 99) = 102 -> 109; p3 ready 112 -> 128        => p2 102-109
SECOND_COPY = {
    "t1": ("p1", 10, 24),
    "t3": ("p1", 40, 51),
    "t4": ("p2", 42, 50),
    "t2": ("p3", 49, 67),
    "t5": ("p1", 62, 74),
    "t6": ("p3", 67, 76),
    "t9": ("p2", 87, 99),
    "t7": ("p1", 74, 81),
    "t8": ("p3", 77, 91),
    "t10": ("p2", 102, 109),
}


def planner(scenario) -> OnlineHeft:
    entry = scenario.workload[0]
    options = scenario.placements_for(entry)[0].options
    graph = scenario.models[entry.model]
    return OnlineHeft({entry.app: (graph, entry.source, options)}, CostOracle(scenario.platform))


def test_second_copy_at_10_is_planned_into_the_gaps_and_ends_at_109():
    scenario = topcuoglu([0, 10])
    heft = planner(scenario)
    first = heft.plan("dag", 0.0)
    assert first.finish_s == pytest.approx(0.080, rel=1e-12)  # the paper's lone schedule
    second = heft.plan("dag", 0.010)
    assert second.finish_s == pytest.approx(0.109, rel=1e-12)
    got = {r.op: (r.unit, r.start_s * 1e3, r.finish_s * 1e3) for r in second.reservations}
    for op, (unit, start_ms, end_ms) in SECOND_COPY.items():
        assert got[op][0] == f"host.{unit}", op
        assert got[op][1:] == pytest.approx((start_ms, end_ms), rel=1e-12), op
    # the order it runs in is by reserved start
    assert [r.start_s for r in second.reservations] == sorted(
        r.start_s for r in second.reservations
    )


def test_the_engine_runs_the_plan_109_where_unit_queueing_gives_137_or_122():
    requests = simulate(topcuoglu([0, 10])).requests
    assert list(requests["finish_s"]) == pytest.approx([0.080, 0.109], rel=1e-12)
    assert requests["decision"].tolist() == ["device", "device"]
    # the same two copies on static HEFT's placement, served by the units' schedulers
    for scheduler, finish_ms in (("fcfs", 137), ("ready_order", 122)):
        static = simulate(topcuoglu([0, 10], {"policy": "heft"}, scheduler)).requests
        assert static["finish_s"].max() == pytest.approx(finish_ms / 1e3, rel=1e-12)


def reservations_by_request(monkeypatch) -> list:
    """Record what the engine's planner returns, in request id order."""
    made = []
    plan = OnlineHeft.plan

    def recording(self, app, arrival_s):
        schedule = plan(self, app, arrival_s)
        made.append(schedule)
        return schedule

    monkeypatch.setattr(OnlineHeft, "plan", recording)
    return made


def assert_simulated_is_planned(result, made) -> None:
    ops = result.ops
    assert len(ops) == sum(len(s.reservations) for s in made)
    for rid, schedule in enumerate(made):
        mine = ops[ops["request_id"] == rid].set_index("op")
        for r in schedule.reservations:
            row = mine.loc[r.op]
            assert row["unit"] == r.unit, (rid, r.op)
            assert row["start_s"] == pytest.approx(r.start_s, rel=1e-9, abs=1e-12), (rid, r.op)
            assert row["end_s"] == pytest.approx(r.finish_s, rel=1e-9, abs=1e-12), (rid, r.op)
    finish = result.requests.set_index("request_id")["finish_s"]
    for rid, schedule in enumerate(made):
        assert finish[rid] == pytest.approx(schedule.finish_s, rel=1e-9, abs=1e-12)


def test_simulated_start_and_finish_equal_the_reservations(monkeypatch):
    made = reservations_by_request(monkeypatch)
    result = simulate(topcuoglu([0, 10, 10, 25, 60, 61, 200]))
    assert len(made) == 7
    assert_simulated_is_planned(result, made)
    # the second request's reservations are the hand-computed ones
    second = {r.op: (r.start_s * 1e3, r.finish_s * 1e3) for r in made[1].reservations}
    assert second["t10"] == pytest.approx((102, 109))


def test_online_heft_is_rejected_among_replicas_and_with_a_transfer_timeout():
    def replicas(doc):
        doc.pop("placement")
        doc["workload"][0]["replicas"] = [ONLINE, {"policy": "heft"}]

    with pytest.raises(ScenarioError, match=r"workload\[0\]\.replicas\[0\]\.online: online HEFT"):
        topcuoglu([0], edit=replicas)

    def timeout(doc):
        doc["workload"][0]["transfer_timeout_ms"] = 100

    with pytest.raises(ScenarioError, match="remove its transfer timeout"):
        topcuoglu([0], edit=timeout)


def test_a_unit_online_heft_may_reserve_cannot_serve_another_app():
    def other(doc):
        app = copy.deepcopy(doc["workload"][0])
        doc["workload"].append(
            {**app, "app": "other", "placement": {"policy": "single", "unit": "p1"}}
        )

    with pytest.raises(PlacementError, match=r"app 'other' runs ops on host\.p1"):
        simulate(topcuoglu([0], edit=other))
    # socsim validate (and run, before anything is simulated) say where
    (problem,) = plan_problems(topcuoglu([0], edit=other))
    assert problem.path == "workload[1].placement"
    assert "online HEFT (dag) may reserve" in problem.message

    def excluded(doc):
        other(doc)
        doc["placement"] = {**ONLINE, "exclude": ["p1"]}

    result = simulate(topcuoglu([0, 10], edit=excluded))
    assert set(result.ops[result.ops["app"] == "dag"]["unit"]) <= {"host.p2", "host.p3"}


# -- properties on random DAGs and arrivals --------------------------------------------------
@st.composite
def online_scenarios(draw) -> dict:
    """Random DAGs (explicit time tables and communication costs, as the paper's) on 2-3
    units of one node, one or two online apps, random arrival times (ms)."""
    units = [f"p{k}" for k in range(draw(st.integers(2, 3)))]
    models, workload = {}, []
    for a in range(draw(st.integers(1, 2))):
        n = draw(st.integers(1, 7))
        ops = [
            {"name": f"t{i}", "time_ms": {u: draw(st.integers(1, 20)) for u in units}}
            for i in range(n)
        ]
        edges = [
            {"src": f"t{i}", "dst": f"t{j}", "comm_ms": draw(st.integers(0, 15))}
            for j in range(1, n)
            for i in range(j)
            if draw(st.booleans())
        ]
        models[f"m{a}"] = {"ops": ops, "edges": edges}
        times = sorted(draw(st.lists(st.integers(0, 60), min_size=1, max_size=5)))
        workload.append(
            {
                "app": f"a{a}",
                "model": f"m{a}",
                "source": "host",
                "arrival": {"process": "trace", "times_ms": times},
            }
        )
    unit = {"kind": "cpu", "efficiency": {"default": 1.0}, "idle_w": 0, "active_w": 0}
    return {
        "name": "online_random",
        "seed": 0,
        "nodes": {"host": {"role": "device", "units": {u: dict(unit) for u in units}}},
        "models": models,
        "workload": workload,
        "placement": ONLINE,
    }


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=online_scenarios())
def test_random_online_schedules_are_feasible_and_simulated_as_planned(monkeypatch, doc):
    scenario = parse_scenario(doc, base_dir=EXAMPLE.parent)
    with monkeypatch.context() as patch:
        made = reservations_by_request(patch)
        result = simulate(scenario)
    requests = result.requests.set_index("request_id")
    assert len(made) == len(requests)
    # no two reservations overlap on a unit (exact: the planner's own arithmetic)
    slots: dict[str, list] = {}
    for schedule in made:
        for r in schedule.reservations:
            slots.setdefault(r.unit, []).append((r.key, r.start_s, r.finish_s))
    for unit, busy in slots.items():
        busy.sort()  # by key: reserved start, then reservation order
        for (_, _, end), (_, start, _) in itertools.pairwise(busy):
            assert start >= end - 1e-12, unit
    # precedence and communication: an op starts after each input is on its unit
    for rid, schedule in enumerate(made):
        graph = scenario.models[requests.loc[rid, "model"]]
        where = {r.op: r for r in schedule.reservations}
        for r in schedule.reservations:
            assert r.start_s >= schedule.arrival_s - 1e-12
            for pred in graph.predecessors(r.op):
                p = where[pred]
                comm_s = graph.edge(pred, r.op).comm_s if p.unit != r.unit else 0.0
                assert r.start_s >= p.finish_s + comm_s - 1e-9, (rid, pred, r.op)
    assert_simulated_is_planned(result, made)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=scenarios(max_ops=6, power_management=True))
def test_with_inexact_costs_units_still_run_in_reservation_order(monkeypatch, doc):
    """Roofline costs, DVFS, shared DRAM, contended radio links: ops start later or
    earlier than reserved, yet each unit runs its ops one at a time in reservation order
    and every request completes (unless a battery stops the run). In order, that is,
    of the reservations that existed: an op that started early may be overtaken in key
    order by a later request's reservation inserted into the gap before its slot (the
    planner does not see that it started; found by hypothesis on 2026-12-07), and then
    that request arrived after the op started."""
    doc = {**doc, "placement": ONLINE}
    scenario = parse_scenario(doc, base_dir=EXAMPLE.parent)
    with monkeypatch.context() as patch:
        made = reservations_by_request(patch)
        result = simulate(scenario)
    key = {(rid, r.op): r.key for rid, s in enumerate(made) for r in s.reservations}
    unit_of = {(rid, r.op): r.unit for rid, s in enumerate(made) for r in s.reservations}
    arrival = {rid: s.arrival_s for rid, s in enumerate(made)}
    ops = result.ops.sort_values(["start_s", "end_s"], kind="stable")
    for unit, rows in ops.groupby("unit", sort=False):
        ran = list(zip(rows["request_id"], rows["op"], strict=True))
        assert all(unit_of[r] == unit for r in ran)
        ends, starts = rows["end_s"].to_numpy(), rows["start_s"].to_numpy()
        for a, first in enumerate(ran):
            for later in ran[a + 1 :]:
                if key[later] < key[first]:  # reserved after ``first`` had started
                    assert arrival[later[0]] >= starts[a], (unit, first, later)
        assert (starts[1:] >= ends[:-1]).all(), unit  # one op at a time
    if result.batteries["empty_at_s"].isna().all():
        assert (result.requests["status"] == "completed").all()


def test_apps_sharing_reservations_share_one_arithmetic():
    """An app whose costs are floats makes every online app's costs floats (their slots
    are compared with each other); the schedule is the same as in exact arithmetic."""
    scenario = topcuoglu([0])
    graph = scenario.models["topcuoglu"]
    oracle = CostOracle(scenario.platform)
    heft = OnlineHeft({"a": (graph, "host", {"exact": "no"}), "b": (graph, "host", {})}, oracle)
    assert not heft.exact
    assert heft.plan("b", 0.0).finish_s == pytest.approx(0.080, rel=1e-12)
    second = heft.plan("a", 0.010)
    assert isinstance(second.reservations[0].key[0], float)
    got = {r.op: (r.unit, r.start_s * 1e3, r.finish_s * 1e3) for r in second.reservations}
    for op, (unit, start_ms, end_ms) in SECOND_COPY.items():
        assert got[op] == pytest.approx((f"host.{unit}", start_ms, end_ms), rel=1e-12), op


@settings(max_examples=40, deadline=None)
@given(doc=online_scenarios(), more=st.lists(st.integers(0, 30), max_size=8))
def test_forgetting_past_slots_changes_no_schedule(doc, more):
    """Slots that ended before an arrival are dropped (forget_after=0: at almost every
    request); every reservation is the same as with all slots kept."""
    doc["workload"][0]["arrival"]["times_ms"] += [100 + t for t in sorted(more)]
    scenario = parse_scenario(doc, base_dir=EXAMPLE.parent)
    apps = {
        e.app: (scenario.models[e.model], e.source, scenario.placements_for(e)[0].options)
        for e in scenario.workload
    }
    oracle = CostOracle(scenario.platform)
    arrivals = sorted(
        (t / 1e3, w["app"]) for w in doc["workload"] for t in w["arrival"]["times_ms"]
    )
    kept, forgetting = OnlineHeft(apps, oracle, forget_after=10**9), OnlineHeft(apps, oracle, 0)
    for t, app in arrivals:
        assert forgetting.plan(app, t).reservations == kept.plan(app, t).reservations
    assert sum(forgetting.held.values()) <= sum(kept.held.values())
