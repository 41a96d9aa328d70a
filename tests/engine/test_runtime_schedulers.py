"""DS3's run-time schedulers (MET, EFT, ETF, STF, ETF_LB) in the engine: the published
Topcuoglu run, hand-computed cases, and properties on random scenarios."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from engine.test_invariants import check_invariants
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import plan_apps, simulate
from simulator.errors import PlacementError, ScenarioError
from simulator.spec import parse_scenario

EXAMPLE = Path("scenarios/examples/heft_topcuoglu.yaml")
RULES = ("met", "eft", "etf", "stf", "etf_lb")


def topcuoglu(policy: str):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["placement"] = {"policy": policy}
    return parse_scenario(doc, base_dir=EXAMPLE.parent)


def schedule(result) -> dict[str, tuple[str, float, float]]:
    """op -> (unit, start ms, end ms) of the first request."""
    ops = result.ops[result.ops["request_id"] == 0]
    return {
        row.op: (row.unit.split(".")[1], round(row.start_s * 1e3, 9), round(row.end_s * 1e3, 9))
        for row in ops.itertuples()
    }


# DS3 (github.com/segemena/DS3, config_Jobs/job_Top.txt + config_SoC/SoC.Top.txt: the
# Topcuoglu graph; bandwidth 1 between distinct PEs, so a transfer costs its volume,
# and 10000 within a PE, int(volume / 10000) = 0) gives makespan 80 for MET, ETF, EFT.
# The schedules below are DS3's rules worked by hand on that input.
DS3_SCHEDULE = {
    "t1": ("p3", 0, 9),
    "t2": ("p1", 32, 45),  # data from p3 at 9 + 18 = 27; p1 runs t3 (ready at 21) first
    "t3": ("p1", 21, 32),
    "t4": ("p2", 18, 26),
    "t5": ("p3", 9, 19),
    "t6": ("p3", 19, 28),
    "t7": ("p1", 45, 52),
    "t8": ("p1", 53, 58),  # t4's data: 26 + 27
    "t9": ("p2", 61, 73),  # t2's data: 45 + 16
    "t10": ("p2", 73, 80),
}


@pytest.mark.parametrize("policy", ["met", "etf", "stf", "etf_lb"])
def test_ds3_rules_reproduce_ds3s_topcuoglu_run(policy):
    result = simulate(topcuoglu(policy))
    assert result.requests["latency_s"].iloc[0] == pytest.approx(0.080, rel=1e-12)
    expected = dict(DS3_SCHEDULE)
    if policy != "met":
        # t5 and t6 both go to p3 at t = 9: MET decides them in ready order; ETF (t6
        # finishes at 18 < 19) and STF (9 < 10) decide t6 first, and p3 serves it first
        expected.update({"t6": ("p3", 9, 18), "t5": ("p3", 18, 28)})
    assert schedule(result) == expected


def test_eft_reproduces_ds3s_topcuoglu_makespan():
    result = simulate(topcuoglu("eft"))
    assert result.requests["latency_s"].iloc[0] == pytest.approx(0.080, rel=1e-12)
    # EFT decides t2..t6 one by one in ready order at t = 9 (t2 first: p3 finishes it at
    # 27, before p1's 9 + 18 + 13 = 40), so t5 then waits for p3 and t6 goes to p2
    units = {op: unit for op, (unit, _, _) in schedule(result).items()}
    assert units == {
        "t1": "p3", "t2": "p3", "t3": "p1", "t4": "p2", "t5": "p3",
        "t6": "p2", "t7": "p1", "t8": "p1", "t9": "p2", "t10": "p2",
    }  # fmt: skip


def test_runtime_policy_plans_each_op_on_its_fastest_unit_and_says_so():
    plan = plan_apps(topcuoglu("etf"))["dag"]
    assert plan.placement.notes["runtime"] == "etf"
    assert dict(zip(plan.ops, plan.units, strict=True))["t1"] == "host.p3"


def _soc(units: dict, ops: list, edges: list, times_ms: list, policy: str) -> dict:
    return {
        "name": "hand",
        "seed": 0,
        "nodes": {
            "host": {
                "role": "device",
                "units": {
                    u: {"kind": "cpu", "efficiency": {"default": 1.0}, "idle_w": 0, "active_w": 0}
                    for u in units
                },
            }
        },
        "models": {"m": {"ops": ops, "edges": edges}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "host",
                "arrival": {"process": "trace", "times_ms": times_ms},
            }
        ],
        "placement": {"policy": policy},
    }


def test_stf_serves_the_shortest_ready_op_first():
    # r (1 ms) forks into a (5), b (2), c (3), all fastest on u1 (u2 takes 100 ms):
    # STF decides b, c, a and u1 serves them in that order; MET decides in ready order
    ops = [{"name": "r", "time_ms": {"u1": 1, "u2": 100}}] + [
        {"name": n, "time_ms": {"u1": t, "u2": 100}} for n, t in (("a", 5), ("b", 2), ("c", 3))
    ]
    edges = [{"src": "r", "dst": n, "comm_ms": 50} for n in "abc"]
    stf = schedule(simulate(parse_scenario(_soc(("u1", "u2"), ops, edges, [0], "stf"))))
    assert stf == {
        "r": ("u1", 0, 1), "b": ("u1", 1, 3), "c": ("u1", 3, 6), "a": ("u1", 6, 11),
    }  # fmt: skip
    met = schedule(simulate(parse_scenario(_soc(("u1", "u2"), ops, edges, [0], "met"))))
    assert met["a"] == ("u1", 1, 6) and met["b"] == ("u1", 6, 8) and met["c"] == ("u1", 8, 11)


def test_etf_lb_balances_ties_over_the_run_where_etf_takes_the_first_unit():
    # one op, 10 ms on either unit; requests at 0 and 100 ms (both units idle each time):
    # ETF takes u1 both times; ETF_LB gives the second to u2, which has had fewer ops
    ops = [{"name": "x", "time_ms": {"u1": 10, "u2": 10}}]
    for policy, second in (("etf", "u1"), ("etf_lb", "u2")):
        result = simulate(parse_scenario(_soc(("u1", "u2"), ops, [], [0, 100], policy)))
        units = result.ops.sort_values("request_id")["unit"].tolist()
        assert units == ["host.u1", f"host.{second}"], policy


def test_etf_decides_the_earliest_finishing_ready_op_first():
    # two entry ops ready at 0: p (u1: 8, u2: 9) and q (u1: 3, u2: 20). EFT in ready order
    # puts p on u1 (8), then q on u1 after it (11 < 20); ETF puts q first on u1 (3), then
    # p on u2 (9 < 3 + 8 = 11): makespan 9 instead of 11
    ops = [
        {"name": "p", "time_ms": {"u1": 8, "u2": 9}},
        {"name": "q", "time_ms": {"u1": 3, "u2": 20}},
    ]
    etf = schedule(simulate(parse_scenario(_soc(("u1", "u2"), ops, [], [0], "etf"))))
    assert etf == {"q": ("u1", 0, 3), "p": ("u2", 0, 9)}
    eft = schedule(simulate(parse_scenario(_soc(("u1", "u2"), ops, [], [0], "eft"))))
    assert eft == {"p": ("u1", 0, 8), "q": ("u1", 8, 11)}


def test_a_run_time_policy_with_a_transfer_timeout_is_refused():
    ops = [{"name": "x", "time_ms": {"u1": 10, "u2": 10}}]
    doc = _soc(("u1", "u2"), ops, [], [0], "etf")
    doc["workload"][0]["transfer_timeout_ms"] = 5
    with pytest.raises((PlacementError, ScenarioError), match="run-time policy"):
        simulate(parse_scenario(doc))


PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(scenarios(max_ops=8), st.sampled_from(RULES))
def test_every_op_runs_once_after_its_inputs_on_random_scenarios(doc, policy):
    doc["placement"] = {"policy": policy}
    check_invariants(doc, simulate(parse_scenario(doc)))


@PROPERTY
@given(scenarios(max_ops=8), st.sampled_from(RULES))
def test_run_time_decisions_are_deterministic_for_a_seed(doc, policy):
    doc["placement"] = {"policy": policy}
    first = simulate(parse_scenario(copy.deepcopy(doc)))
    second = simulate(parse_scenario(copy.deepcopy(doc)))
    for name in ("ops", "transfers", "requests", "units"):
        assert getattr(first, name).equals(getattr(second, name)), name


def test_dynamic_vs_static_example_says_what_it_measures():
    # scenarios/examples/dynamic_vs_static.yaml and docs/placement.md: at 200 req/s, mean
    # latency 7.69 ms under HEFT (p95 14.72), 4.64 ms under ETF (p95 5.60)
    path = Path("scenarios/examples/dynamic_vs_static.yaml")
    figures = {}
    for policy in ("heft", "etf"):
        doc = yaml.safe_load(path.read_text())
        doc["placement"] = {"policy": policy}
        latency = simulate(parse_scenario(doc, base_dir=path.parent)).requests["latency_s"]
        figures[policy] = (round(latency.mean() * 1e3, 2), round(latency.quantile(0.95) * 1e3, 2))
    assert figures == {"heft": (7.69, 14.72), "etf": (4.64, 5.6)}


def test_a_rule_registered_from_python_is_a_policy_the_engine_asks():
    from simulator.placement import POLICIES
    from simulator.placement.runtime import RUNTIME_RULES, Decision, register_runtime_rule

    def first_unit(ready, units):
        """Every op on its first candidate unit."""
        return [Decision(op.key, op.units[0], 0.0) for op in ready]

    register_runtime_rule("first_unit_test", first_unit)
    try:
        result = simulate(topcuoglu("first_unit_test"))
    finally:
        POLICIES._entries.pop("first_unit_test")
        RUNTIME_RULES.pop("first_unit_test")
    # every op on p1, one after another: the sum of p1's column, 127 ms
    assert set(result.ops["unit"]) == {"host.p1"}
    assert result.requests["latency_s"].iloc[0] == pytest.approx(0.127, rel=1e-12)


def test_etf_sees_the_bits_a_link_still_has_to_send():
    # x: 15 ms on the phone's cpu, 1 ms on the edge gpu; its 10,000-byte input takes 10 ms
    # over the 8 Mbit/s link. Request 0 (t = 0): edge 10 + 1 = 11 < 15, edge. Request 1
    # (t = 1 ms): the link has 9 ms of request 0's input left, so the edge would finish at
    # 1 + 9 + 10 + 1 = 21 > 1 + 15 = 16: the cpu (contention-free, the edge looked like 12)
    unit = {"efficiency": {"default": 1.0}, "idle_w": 0, "active_w": 0}
    doc = {
        "name": "link_state",
        "seed": 0,
        "nodes": {
            "phone": {"role": "device", "units": {"cpu": {"kind": "cpu", **unit}}},
            "edge": {"role": "edge", "units": {"gpu": {"kind": "gpu", **unit}}},
        },
        "links": {"wifi": {"ends": ["phone", "edge"], "latency_ms": 0, "bandwidth_mbps": 8}},
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "conv",
                        "input_elems": 2500,  # fp32: 10,000 bytes
                        "output_elems": 0,
                        "time_ms": {"phone.cpu": 15, "edge.gpu": 1},
                    }
                ]
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [0, 1]},
            }
        ],
        "placement": {"policy": "etf"},
    }
    result = simulate(parse_scenario(doc))
    assert result.ops.sort_values("request_id")["unit"].tolist() == ["edge.gpu", "phone.cpu"]
    latency = result.requests.sort_values("request_id")["latency_s"].to_numpy() * 1e3
    assert latency == pytest.approx([11.0, 15.0], rel=1e-9)


def test_a_run_time_app_shares_units_with_a_static_app():
    # the HEFT plan of the paper (manual) and an ETF app on the same three processors,
    # three requests each: every op of every request runs once, after its inputs, and
    # the run-time app sees the static app's queued work as busy units
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["workload"][0]["arrival"] = {"process": "trace", "times_ms": [0, 5, 10]}
    dynamic = copy.deepcopy(doc["workload"][0])
    dynamic.update({"app": "dyn", "placement": {"policy": "etf"}})
    doc["workload"].append(dynamic)
    result = simulate(parse_scenario(doc, base_dir=EXAMPLE.parent))
    requests, ops = result.requests, result.ops
    assert (requests["status"] == "completed").all() and len(requests) == 6
    assert (ops.groupby("request_id").size() == 10).all()
    assert not ops.duplicated(["request_id", "op"]).any()
    graph = parse_scenario(doc, base_dir=EXAMPLE.parent).models["topcuoglu"]
    by_key = ops.set_index(["request_id", "op"])
    for edge in graph.edges():
        src = by_key.xs(edge.src, level="op")["end_s"].sort_index()
        dst = by_key.xs(edge.dst, level="op")["start_s"].sort_index()
        assert (dst >= src).all()
    # a processor runs one op at a time
    for _, group in ops.sort_values("start_s").groupby("unit"):
        assert (group["start_s"].to_numpy()[1:] >= group["end_s"].to_numpy()[:-1] - 1e-12).all()


@PROPERTY
@given(scenarios(max_ops=6), st.sampled_from(RULES), st.integers(1, 4))
def test_run_time_and_static_apps_together_run_every_op_once(doc, policy, count):
    # the random app keeps its static (manual) placement; a second app of the same model
    # has a run-time one: both share the units and links
    dynamic = copy.deepcopy(doc["workload"][0])
    dynamic.update({"app": "dyn", "count": count, "placement": {"policy": policy}})
    doc["workload"].append(dynamic)
    scenario = parse_scenario(doc)
    result = simulate(scenario)
    requests, ops = result.requests, result.ops
    graph = scenario.models["m"]
    done = requests[requests["status"] == "completed"]
    stopped = bool(result.batteries["empty_at_s"].notna().any())
    if not stopped:
        assert len(done) == len(requests) == doc["workload"][0]["count"] + count
    ran = ops[ops["request_id"].isin(done["request_id"])]
    assert (ran.groupby("request_id").size() == len(graph)).all()
    assert not ops.duplicated(["request_id", "op"]).any()
    by_key = ran.set_index(["request_id", "op"])
    for edge in graph.edges() if len(done) else ():
        src = by_key.xs(edge.src, level="op")["end_s"].sort_index()
        dst = by_key.xs(edge.dst, level="op")["start_s"].sort_index()
        assert (dst >= src).all()
    for uid, group in ops.groupby("unit"):
        ends = group.sort_values("start_s")
        # at most `slots` ops at once on a unit
        events = sorted([(s, 1) for s in ends["start_s"]] + [(e, -1) for e in ends["end_s"]])
        running = peak = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
        assert peak <= scenario.platform.unit(uid).slots


def test_etf_reads_the_backlog_of_a_shared_medium_station_link():
    """ETF estimates when an input would reach a unit from the bits still queued on the
    link direction; a fleet's station link is a port of a shared medium, not a fluid
    link (found when merging: the snapshot read a fluid link's private clock).

    One phone (1 GFLOP/s) on a medium (8 Mbit/s) to a cloud GPU (1 TFLOP/s); two
    requests at 0 and 0.1 s, each a 1 MB input to a 10 GFLOP op: 10 s on the phone,
    so ETF sends both to the cloud, the second behind the first's upload (FIFO):
    1 s + 10 ms, then 2 s + 10 ms (latency 1.91 s)."""
    from spec.test_fleets import fleet_doc

    document = fleet_doc(1)
    document["models"]["m"]["ops"][0].update(flops=10e9)
    document["workload"][0]["arrival"] = {"process": "trace", "times_ms": [0, 100]}
    document["placement"] = {"policy": "etf"}
    result = simulate(parse_scenario(document))
    assert list(result.ops["unit"]) == ["cloud.gpu", "cloud.gpu"]
    assert list(result.requests["latency_s"]) == pytest.approx([1.01, 1.91], rel=1e-12)
