"""The error hierarchy: fields, messages, and pickling (sweep workers send errors back)."""

from __future__ import annotations

import pickle

import pytest

from simulator.errors import (
    ModelError,
    PlacementError,
    Problem,
    ScenarioError,
    SimulationError,
    SocsimError,
)
from simulator.spec import parse_scenario


def test_hierarchy():
    for cls in (ScenarioError, ModelError, PlacementError, SimulationError):
        assert issubclass(cls, SocsimError)
    assert issubclass(SocsimError, Exception)


def test_problem_text():
    p = Problem("workload[0].arrival.rate_hz", "expected a number > 0", "s.yaml", 12, "rate_hz")
    assert str(p) == (
        "s.yaml:12: workload[0].arrival.rate_hz: expected a number > 0 (did you mean 'rate_hz'?)"
    )
    assert str(Problem("", "a scenario must be a mapping of keys")) == (
        "<scenario>: <root>: a scenario must be a mapping of keys"
    )
    assert str(Problem("seed", "bad", file="s.yaml")) == "s.yaml: seed: bad"


def test_problem_is_frozen_and_hashable():
    p = Problem("a", "b", "f", 1)
    assert p == Problem("a", "b", "f", 1)
    assert len({p, Problem("a", "b", "f", 1)}) == 1
    with pytest.raises(AttributeError):
        p.line = 2


def test_problem_pickles():
    p = Problem("nodes.phone", "missing", "f.yaml", 3, "phone")
    assert pickle.loads(pickle.dumps(p)) == p


def test_scenario_error_lists_every_problem():
    problems = [Problem("a", "one", "f.yaml", 1), Problem("b", "two", "f.yaml", 2, "bb")]
    err = ScenarioError(problems)
    assert err.problems == tuple(problems)
    assert str(err) == (
        "2 problems in scenario:\n  - f.yaml:1: a: one\n  - f.yaml:2: b: two (did you mean 'bb'?)"
    )
    assert str(ScenarioError(problems[:1])).startswith("1 problem in scenario:\n")


def test_scenario_error_pickle_round_trip():
    err = ScenarioError([Problem("a", "one", "f.yaml", 1), Problem("b", "two", None, None, "c")])
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ScenarioError
    assert again.problems == err.problems
    assert str(again) == str(err)


def test_real_scenario_error_pickles():
    with pytest.raises(ScenarioError) as info:
        parse_scenario({"name": "x", "nodez": {}, "worklaod": []}, source="point.yaml")
    err = info.value
    assert len(err.problems) >= 3
    again = pickle.loads(pickle.dumps(err))
    assert again.problems == err.problems
    assert str(again) == str(err)


def test_model_error_pickles():
    err = ModelError("the graph has a cycle: a -> b -> a", "net")
    assert str(err) == "model 'net': the graph has a cycle: a -> b -> a"
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.message, again.model, str(again)) == (
        ModelError,
        err.message,
        "net",
        str(err),
    )
    bare = pickle.loads(pickle.dumps(ModelError("no ops")))
    assert (bare.message, bare.model, str(bare)) == ("no ops", None, "no ops")


def test_placement_error_pickles():
    err = PlacementError("'phone.npu' cannot run it", "single", "fc8")
    assert str(err) == "placement 'single' (op 'fc8'): 'phone.npu' cannot run it"
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.message, again.policy, again.op, str(again)) == (
        PlacementError,
        err.message,
        "single",
        "fc8",
        str(err),
    )
    assert str(PlacementError("no unit")) == "placement: no unit"
    assert str(PlacementError("x", op="conv1")) == "placement (op 'conv1'): x"


def test_simulation_and_base_errors_pickle():
    for err in (SimulationError("negative time"), SocsimError("plain")):
        again = pickle.loads(pickle.dumps(err))
        assert (type(again), str(again)) == (type(err), str(err))
