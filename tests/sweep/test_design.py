"""Sweep expansion: pure, counted, valued, deterministic."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ScenarioError
from simulator.schema import Context, Loc
from simulator.spec.sweepdefs import SWEEP
from simulator.sweep import Parameter, SweepSpec, expand, point_seed, range_values, sweep_spec


def checked(section: dict) -> dict:
    ctx = Context()
    out = SWEEP.check(section, Loc("sweep"), ctx)
    assert not ctx.problems, ctx.problems
    return out


def test_step_ranges_add_as_decimals_and_include_stop():
    assert range_values(0, 0.3, step=0.1) == (0.0, 0.1, 0.2, 0.3)
    assert range_values(10, 100, step=30) == (10.0, 40.0, 70.0, 100.0)
    assert range_values(1, 2, step=0.4) == (1.0, 1.4, 1.8)  # 2.2 would pass stop


def test_num_ranges_are_linear_or_geometric_with_exact_ends():
    assert range_values(0, 1, num=5) == (0.0, 0.25, 0.5, 0.75, 1.0)
    values = range_values(10, 10000, num=4, log=True)
    assert values[0] == 10.0 and values[-1] == 10000.0
    assert values[1] == pytest.approx(100.0, rel=1e-12) and values[2] == pytest.approx(1000.0)


def test_whole_number_ranges_stay_whole():
    spec = sweep_spec(
        checked({"parameters": {"workload[0].count": {"start": 1, "stop": 7, "step": 3}}})
    )
    assert spec.parameters[0].values == (1, 4, 7)
    assert all(type(v) is int for v in spec.parameters[0].values)


def test_grid_is_every_combination_first_parameter_slowest():
    spec = sweep_spec(checked({"parameters": {"a.x": [1, 2, 3], "b.y": ["p", "q"]}}))
    points = expand(spec, seed=0)
    assert points == [
        {"a.x": 1, "b.y": "p"},
        {"a.x": 1, "b.y": "q"},
        {"a.x": 2, "b.y": "p"},
        {"a.x": 2, "b.y": "q"},
        {"a.x": 3, "b.y": "p"},
        {"a.x": 3, "b.y": "q"},
    ]


def test_zip_pairs_the_ith_values():
    spec = sweep_spec(
        checked(
            {
                "design": "zip",
                "parameters": {"a.x": [1, 2, 3], "b.y": {"start": 5, "stop": 7, "step": 1}},
            }
        )
    )
    assert expand(spec, seed=0) == [
        {"a.x": 1, "b.y": 5},
        {"a.x": 2, "b.y": 6},
        {"a.x": 3, "b.y": 7},
    ]


def test_random_draws_are_in_range_and_deterministic():
    section = {
        "design": "random",
        "samples": 50,
        "parameters": {"a.x": {"start": 1, "stop": 1000, "log": True}, "b.y": ["p", "q", "r"]},
    }
    spec = sweep_spec(checked(section))
    points = expand(spec, seed=11)
    assert len(points) == 50 and points == expand(spec, seed=11)
    assert points != expand(spec, seed=12)
    assert all(1 <= p["a.x"] <= 1000 for p in points)
    assert {p["b.y"] for p in points} == {"p", "q", "r"}


def test_latin_hypercube_fills_every_stratum_once():
    n = 20
    spec = sweep_spec(
        checked({"design": "lhs", "samples": n, "parameters": {"a.x": {"start": 0, "stop": 10}}})
    )
    xs = [p["a.x"] for p in expand(spec, seed=3)]
    assert sorted(int(x / (10 / n)) for x in xs) == list(range(n))
    # a list of n values: each drawn exactly once
    spec = sweep_spec(checked({"design": "lhs", "samples": 4, "parameters": {"b": [1, 2, 3, 4]}}))
    assert sorted(p["b"] for p in expand(spec, seed=3)) == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("section", "path", "text"),
    [
        ({"design": "random", "parameters": {"a": [1]}}, "sweep.samples", "needs samples"),
        ({"samples": 3, "parameters": {"a": [1]}}, "sweep.samples", "takes no samples"),
        ({"parameters": {"a": {"start": 1, "stop": 2}}}, "sweep.parameters.a", "discrete values"),
        (
            {"design": "zip", "parameters": {"a": [1, 2], "b": [1]}},
            "sweep.parameters",
            "one length",
        ),
        # found by tests/engine/test_random_invariants.py: a swept seed made a second
        # 'seed' column, and writing the table failed
        ({"parameters": {"seed": [1, 2]}}, "sweep.parameters.seed", "replicates: N"),
        # found by tests/spec/test_fuzz_documents.py: num: 1e9 tried to allocate 7.5 GiB
        (
            {"parameters": {"a": {"start": 1, "stop": 2, "num": 10**9}}},
            "sweep.parameters.a",
            "1,000,000,000 values; a sweep runs at most 1,000,000 runs",
        ),
        (
            {"parameters": {"a": {"start": 0, "stop": 1, "step": 1e-7}}},
            "sweep.parameters.a",
            "10,000,001 values",
        ),
        (
            {"parameters": {"a": {"start": 1, "stop": 2, "num": 2000}, "b": list(range(501))}},
            "sweep",
            "1,002,000 points x 1 replicates = 1,002,000 runs",
        ),
        (
            {"replicates": 10**6, "parameters": {"a": [1, 2]}},
            "sweep",
            "2 points x 1,000,000 replicates",
        ),
        (
            {"design": "random", "samples": 10**7, "parameters": {"a": {"start": 1, "stop": 2}}},
            "sweep",
            "10,000,000 points",
        ),
    ],
)
def test_inconsistent_sections_are_scenario_errors_with_their_path(section, path, text):
    with pytest.raises(ScenarioError) as info:
        sweep_spec(checked(section))
    assert info.value.problems[0].path == path and text in info.value.problems[0].message


@pytest.mark.parametrize(
    ("section", "path", "text"),
    [
        ({"parameters": {"a": []}}, "sweep.parameters.a", "at least one value"),
        (
            {"parameters": {"a": {"start": 1, "stop": 9, "step": 1, "num": 3}}},
            "sweep.parameters.a",
            "not both",
        ),
        (
            {"parameters": {"a": {"start": 0, "stop": 9, "num": 3, "log": True}}},
            "sweep.parameters.a",
            "> 0",
        ),
        ({"parameters": {"a..b": [1]}}, "sweep.parameters.a..b", "pattern"),
        ({"parameters": {"a": [1]}, "design": "grdi"}, "sweep.design", "unknown sweep design"),
        (
            {"parameters": {"a": [1]}, "executor": {"name": "serial", "workers": 2}},
            "sweep.executor.workers",
            "unknown key",
        ),
    ],
)
def test_bad_sections_fail_in_the_schema_with_their_path(section, path, text):
    ctx = Context()
    SWEEP.check(section, Loc("sweep"), ctx)
    assert ctx.problems and ctx.problems[0].path == path and text in ctx.problems[0].message


def test_point_seeds_are_spawned_deterministically_and_differ():
    seeds = [point_seed(2017, i) for i in range(100)]
    assert seeds == [point_seed(2017, i) for i in range(100)]
    assert len(set(seeds)) == 100 and seeds != [point_seed(2018, i) for i in range(100)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_grid_size_is_the_product_of_the_value_counts(sizes):
    params = tuple(Parameter(f"p{i}", tuple(range(n))) for i, n in enumerate(sizes))
    points = expand(SweepSpec(params), seed=0)
    assert len(points) == math.prod(sizes)
    assert len({tuple(p.values()) for p in points}) == len(points)  # no repeats
