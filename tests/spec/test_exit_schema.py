"""A model's ``exits:`` in YAML: every mistake reported at its path, file and line, with
the nearest valid name where there is one."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import yaml

from simulator.errors import ScenarioError
from simulator.spec import load_scenario, parse_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from test_early_exit import chain_document


def problems(doc: dict) -> list[str]:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def with_exits(*exits) -> dict:
    doc = copy.deepcopy(chain_document())
    doc["models"]["m"]["exits"] = list(exits)
    return doc


def test_an_exit_naming_an_unknown_op_gets_the_nearest():
    doc = with_exits({"name": "e1", "after": "aa"})
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    (problem,) = err.value.problems
    assert problem.path == "models.m.exits[0].after"
    assert "unknown op 'aa'" in problem.message
    assert problem.suggestion == "a"


@pytest.mark.parametrize("probability", [-0.1, 1.5, "half"])
def test_a_probability_outside_0_1_is_refused(probability):
    found = problems(with_exits({"name": "e1", "after": "a", "probability": probability}))
    assert len(found) == 1 and found[0].startswith("models.m.exits[0].probability:")


def test_probabilities_summing_over_one():
    found = problems(
        with_exits(
            {"name": "e1", "after": "a", "probability": 0.7},
            {"name": "e2", "after": "b", "probability": 0.4},
        )
    )
    assert found == ["models.m.exits[1].probability: the probabilities sum to 1.1 > 1"]


def test_names_heads_order_and_outputs():
    found = problems(
        with_exits(
            {"name": "final", "after": "b"},
            {"name": "e1", "after": "a", "head": [{"name": "c", "kind": "fc"}]},
            {"name": "e1", "after": "c"},
        )
    )
    assert found == [
        "models.m.exits[0].name: exit name 'final' is the model's own output; give another",
        "models.m.exits[1].head: head op name 'c' is taken; rename it",
        "models.m.exits[2].name: exit name 'e1' is used twice; give another",
        "models.m.exits[2].after: 'c' is an output of the model: the last exit already",
    ]
    found = problems(with_exits({"name": "late", "after": "b"}, {"name": "early", "after": "a"}))
    assert found == [
        "models.m.exits[1].after: exit 'early' (after 'a') does not follow exit 'late' "
        "(after 'b'): list the exits in the order a request meets them"
    ]


def test_unknown_keys_and_bad_head_ops_in_an_exit():
    found = problems(with_exits({"name": "e1", "after": "a", "probabilty": 0.2}))
    assert len(found) == 1 and "unknown key 'probabilty'" in found[0]
    assert "probability" in found[0]
    found = problems(
        with_exits({"name": "e1", "after": "a", "head": [{"name": "h", "kind": "xx"}]})
    )
    assert len(found) == 1 and found[0].startswith("models.m.exits[0].head[0].kind:")


def test_errors_name_the_file_and_line(tmp_path):
    doc = with_exits(
        {"name": "e1", "after": "a", "probability": 0.5}, {"name": "e2", "after": "bx"}
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    (problem,) = err.value.problems
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "after: bx" in text)
    assert (problem.file, problem.line) == (str(path), line)
    assert problem.path == "models.m.exits[1].after"


def test_thresholds_on_every_exit_and_not_with_a_probability():
    found = problems(
        with_exits(
            {"name": "e1", "after": "a", "threshold": 0.5, "probability": 0.2},
            {"name": "e2", "after": "b"},
        )
    )
    assert found == [
        "models.m.exits[0].threshold: give probability (a share of all requests) or "
        "threshold (a confidence to reach here), not both",
        "models.m.exits[1].name: give a threshold here too: exit 'e1' has one",
    ]
    found = problems(with_exits({"name": "e1", "after": "a", "threshold": 1.5}))
    assert len(found) == 1 and found[0].startswith("models.m.exits[0].threshold:")


def _fused(zoo: str, after: str) -> dict:
    """Zoo model ``zoo`` with the fuse technique and one exit (a 1000-class FC head)."""
    from conftest import one_op_document

    head = [{"name": "e1_fc", "kind": "fc", "macs": 1000, "input_elems": 1, "output_elems": 1000}]
    periodic = {"process": "periodic", "rate_hz": 1}
    doc = one_op_document("fused_exit", {"policy": "single", "unit": "cpu"}, periodic, count=1)
    doc["models"]["m"] = {
        "zoo": zoo,
        "techniques": [{"name": "fuse"}],
        "exits": [{"name": "e1", "after": after, "head": head, "probability": 0.5}],
    }
    return doc


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_exit_after_an_op_a_fusion_ended_with_follows_the_fused_op():
    """AlexNet's conv3 + relu3 fuse into one op named conv3 whose output is relu3's: an exit
    after relu3 is the exit after the fused op (it failed: "names unknown op 'relu3'")."""
    model = parse_scenario(_fused("alexnet", "relu3")).models["m"]
    (exit_,) = model.exits
    assert exit_.after == "conv3" and model.op("conv3").fused == ("conv3", "relu3")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_exit_inside_a_fused_group_says_which_op_to_name():
    found = problems(_fused("resnet18", "bn1"))
    assert found == [
        "models.m.exits[0].after: exit 'e1' names op 'bn1', which a fusion merged into "
        "'conv1' (conv1 + bn1 + relu): its output no longer exists; name 'relu', whose "
        "output the fused op gives"
    ]
