"""``socsim schema``: the JSON Schema for editors, generated from the loader's schema tree
(issue 21 item 9)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from simulator.cli import main
from simulator.exitcodes import EXIT_OK
from simulator.placement.base import POLICIES
from simulator.scheduling import SCHEDULERS
from simulator.schema import Record
from simulator.spec.editor_schema import scenario_json_schema, schema_text
from simulator.workload import ARRIVALS

ROOT = Path(__file__).resolve().parents[2]
#: every shipped scenario (library files, which hold only presets, are another format)
SCENARIOS = sorted(
    path
    for path in (ROOT / "scenarios").rglob("*.yaml")
    if "workload" in (yaml.safe_load(path.read_text(encoding="utf-8")) or {})
)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = scenario_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)  # a valid draft 2020-12 schema
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, document) -> list[tuple[list, str]]:
    return [(list(e.absolute_path), e.message) for e in validator.iter_errors(document)]


def test_schema_is_draft_2020_12_and_json():
    schema = json.loads(schema_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema == scenario_json_schema()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_validates(validator, path):
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert _errors(validator, document) == []


def test_shipped_scenarios_are_all_found():
    folders = {p.parent.name for p in SCENARIOS}
    assert {"examples", "sweeps", "score"} <= folders and len(SCENARIOS) >= 20


def test_registry_names_are_enums_read_at_generation_time():
    schema = scenario_json_schema()
    scheduler = schema["properties"]["scheduler"]
    assert scheduler["enum"] == list(SCHEDULERS.names())
    placement = schema["properties"]["placement"]
    assert placement["properties"]["policy"]["enum"] == list(POLICIES.names())
    arrival = schema["properties"]["workload"]["items"]["properties"]["arrival"]
    assert arrival["properties"]["process"]["enum"] == list(ARRIVALS.names())
    # a policy registered later (a plug-in) is in the next schema generated
    POLICIES.register("zz_test_policy", Record({}, name="zz options"))(lambda *a: None)
    try:
        again = scenario_json_schema()["properties"]["placement"]["properties"]["policy"]
        assert again["enum"][-1] == "zz_test_policy"
    finally:
        del POLICIES._entries["zz_test_policy"]


def test_mistakes_an_editor_flags(validator):
    document = yaml.safe_load(
        (ROOT / "scenarios/examples/neurosurgeon_alexnet.yaml").read_text(encoding="utf-8")
    )
    cases = [
        (("placment",), {}, ([], "'placment' was unexpected")),
        (("placement", "policy"), "split_pont", (["placement", "policy"], "'split_pont' is not")),
        (("scheduler",), "fcf", (["scheduler"], "'fcf' is not one of")),
        (("seed",), -1, (["seed"], "not valid under any")),
        (("nodes", "phone", "unitz"), {}, (["nodes", "phone"], "'unitz' was unexpected")),
        (("workload", 0, "arrival", "process"), "poison", None),
    ]
    for keys, value, expected in cases:
        changed = copy.deepcopy(document)
        target = changed
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
        errors = _errors(validator, changed)
        assert errors, keys
        if expected is not None:
            path, text = expected
            assert any(p == path and text in m for p, m in errors), errors


def test_a_node_naming_a_preset_needs_no_other_key(validator):
    document = yaml.safe_load((ROOT / "scenarios/score/fallback.yaml").read_text(encoding="utf-8"))
    assert document["nodes"]["phone"]["preset"] == "flagship_phone"
    assert _errors(validator, document) == []
    document["nodes"]["phone"]["units"]["cpu_big"]["dvfs"]["governor"]["name"] = "performanse"
    assert _errors(validator, document)  # inside a preset's node, names are still checked


def test_socsim_schema_writes_the_file_or_stdout(tmp_path, capsys):
    out = tmp_path / "scenario.schema.json"
    assert main(["schema", "-o", str(out)]) == EXIT_OK
    assert out.read_text(encoding="utf-8") == schema_text()
    capsys.readouterr()
    assert main(["schema"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == scenario_json_schema()
    status = main(["schema", "-o", str(tmp_path)])  # a folder: a clear error, no traceback
    assert status != EXIT_OK
    assert "is a folder, not a file" in capsys.readouterr().err
