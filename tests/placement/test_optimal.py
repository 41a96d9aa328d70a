"""`optimal` against brute force; HEFT and friends never beat it; `random` is a seeded baseline."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.engine import plan_apps
from simulator.errors import PlacementError
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

UNITS = ("p1", "p2", "p3")


@st.composite
def table_dags(draw, max_ops: int = 6):
    """A scheduling-theory DAG: integer ms cost tables, integer comm costs."""
    n = draw(st.integers(1, max_ops))
    units = UNITS[: draw(st.integers(2, 3))]
    ops, edges = [], []
    for j in range(n):
        able = draw(st.lists(st.sampled_from(units), min_size=1, max_size=len(units), unique=True))
        ops.append(
            {"name": f"t{j}", "time_ms": {u: draw(st.integers(1, 20)) for u in sorted(able)}}
        )
        for i in sorted(draw(st.sets(st.integers(0, j - 1), max_size=2)) if j else ()):
            edges.append({"src": f"t{i}", "dst": f"t{j}", "comm_ms": draw(st.integers(0, 15))})
    return {
        "name": "dag",
        "nodes": {"host": {"units": {u: {"kind": "cpu"} for u in units}}},
        "models": {"g": {"ops": ops, "edges": edges}},
        "workload": [
            {
                "app": "a",
                "model": "g",
                "source": "host",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
    }


def brute_force_ms(doc: dict) -> float:
    """Minimum makespan over every assignment and every topological order (semi-active)."""
    ops = doc["models"]["g"]["ops"]
    comm = {(e["src"], e["dst"]): e["comm_ms"] for e in doc["models"]["g"]["edges"]}
    graph = nx.DiGraph()
    graph.add_nodes_from(op["name"] for op in ops)
    graph.add_edges_from(comm)
    times = {op["name"]: op["time_ms"] for op in ops}
    best = float("inf")
    names = [op["name"] for op in ops]
    for units in itertools.product(*(list(times[n]) for n in names)):
        unit_of = dict(zip(names, units, strict=True))
        for order in nx.all_topological_sorts(graph):
            free, finish = {}, {}
            for op in order:
                u = unit_of[op]
                ready = max(
                    (
                        finish[p] + (0 if unit_of[p] == u else comm[(p, op)])
                        for p in graph.predecessors(op)
                    ),
                    default=0,
                )
                start = max(ready, free.get(u, 0))
                finish[op] = free[u] = start + times[op][u]
            best = min(best, max(finish.values()))
    return best


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(table_dags())
def test_optimal_equals_brute_force_and_no_heuristic_beats_it(doc):
    optimum = {}
    for policy in ("optimal", "heft", "cpop", "peft", "greedy_eft", "random"):
        scenario = parse_scenario(dict(doc, placement={"policy": policy}))
        oracle = CostOracle(scenario.platform)
        plan = plan_apps(scenario, oracle)["a"]
        optimum[policy] = estimate(plan, oracle).latency_s
    assert optimum["optimal"] * 1e3 == pytest.approx(brute_force_ms(doc), abs=1e-9)
    for policy in ("heft", "cpop", "peft", "greedy_eft", "random"):
        assert optimum[policy] >= optimum["optimal"] - 1e-12, policy


def test_optimal_refuses_large_problems_naming_the_limit(small_soc):
    doc = dict(small_soc, placement={"policy": "optimal", "max_ops": 2})
    with pytest.raises(PlacementError, match=r"3 ops is more than max_ops = 2; use 'heft'"):
        plan_apps(parse_scenario(doc))
    doc = dict(small_soc, placement={"policy": "optimal", "max_states": 3})
    with pytest.raises(PlacementError, match="max_states = 3"):
        plan_apps(parse_scenario(doc))


def test_optimal_energy_objective_uses_the_cheapest_units(small_soc):
    # cpu: 1 W, 1 GFLOP/s -> 1 nJ/FLOP; gpu: 2 W, 4 GFLOP/s -> 0.5 nJ/FLOP: all on the gpu
    doc = dict(small_soc, placement={"policy": "optimal", "objective": "device_energy"})
    plan = plan_apps(parse_scenario(doc))["app"]
    assert set(plan.units) == {"phone.gpu"}
    assert plan.placement.notes["optimum_device_energy"] == pytest.approx(2.0 * 4e6 / 4e9)


def test_random_is_seeded(small_soc):
    def units(seed):
        doc = dict(small_soc, placement={"policy": "random", "seed": seed})
        return plan_apps(parse_scenario(doc))["app"].units

    assert units(1) == units(1)
    assert len({units(s) for s in range(12)}) > 1
