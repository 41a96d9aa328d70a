"""Safe YAML reading with marks, and the errors of unreadable files."""

from __future__ import annotations

import pytest

from simulator.errors import ScenarioError
from simulator.spec import load_scenario
from simulator.spec.yamlio import Mark, YamlMap, YamlSeq, load_yaml_text, mark_of, plain


def _problem(text: str):
    with pytest.raises(ScenarioError) as info:
        load_yaml_text(text, "f.yaml")
    assert len(info.value.problems) == 1
    return info.value.problems[0]


def test_marks_of_keys_and_items():
    data = load_yaml_text("a: 1\nb:\n  c: [x, y]\nd:\n  - p\n  - q\n", "f.yaml")
    assert isinstance(data, YamlMap)
    assert data.mark == Mark("f.yaml", 1)
    assert data.key_marks == {
        "a": Mark("f.yaml", 1),
        "b": Mark("f.yaml", 2),
        "d": Mark("f.yaml", 4),
    }
    assert data["b"].key_marks["c"].line == 3
    seq = data["d"]
    assert isinstance(seq, YamlSeq)
    assert [m.line for m in seq.item_marks] == [5, 6]
    assert mark_of(data, "d").line == 4
    assert mark_of(seq, 1).line == 6
    assert mark_of(seq, 7) == seq.mark
    assert mark_of({"a": 1}, "a") is None


def test_plain_strips_marks():
    data = load_yaml_text("a: {b: [1, {c: 2}]}\n", "f.yaml")
    out = plain(data)
    assert out == {"a": {"b": [1, {"c": 2}]}}
    assert type(out) is dict
    assert type(out["a"]["b"]) is list
    assert type(out["a"]["b"][1]) is dict


def test_anchors_and_merge_keys():
    data = load_yaml_text("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n", "f.yaml")
    assert plain(data["derived"]) == {"x": 1, "y": 3}  # own keys override merged ones
    assert data["derived"].key_marks["y"].line == 4
    assert data["derived"].key_marks["x"].line == 1
    data = load_yaml_text("a: &a {x: 1}\nb: &b {x: 2, z: 0}\nc: {<<: [*a, *b], w: 5}\n", "f.yaml")
    assert plain(data["c"]) == {"x": 1, "z": 0, "w": 5}  # the first merged source wins


def test_repeated_key_after_a_merge_is_still_a_duplicate():
    p = _problem("base: &b {x: 1}\nd:\n  <<: *b\n  y: 3\n  y: 4\n")
    assert (p.path, p.line) == ("d.y", 5)
    assert p.message == "duplicate key 'y' (first at line 4)"


def test_duplicate_key_with_both_lines():
    p = _problem("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n")
    assert p.path == "b.c"
    assert p.message == "duplicate key 'c' (first at line 3)"
    assert (p.file, p.line) == ("f.yaml", 5)


def test_duplicate_key_path_through_lists():
    p = _problem("w:\n  - x: 1\n  - {x: 1, y: {z: 1, z: 2}}\n")
    assert (p.path, p.line) == ("w[1].y.z", 3)


def test_every_duplicate_key_reported():
    with pytest.raises(ScenarioError) as info:
        load_yaml_text("a: 1\na: 2\nb: 1\nb: 2\n", "f.yaml")
    assert [(p.path, p.line) for p in info.value.problems] == [("a", 2), ("b", 4)]


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("a:\n  b: 1\n   c: 2\n", 3, "mapping values are not allowed here"),
        ("a:\n\tb: 1\n", 2, "found character '\\t' that cannot start any token"),
        ("a: [1, 2\nb: 3\n", 2, "while parsing a flow sequence started at line 1"),
        ('a: "open\nb: 1\n', 3, "while scanning a quoted scalar started at line 1"),
        ("a: 1\n---\nb: 2\n", 2, "expected a single document in the stream, but found another"),
        ("? [a, b]\n: 1\n", 1, "found an unhashable mapping key"),
    ],
)
def test_syntax_errors_name_their_line(text, line, needle):
    p = _problem(text)
    assert p.message.startswith("not valid YAML: ")
    assert needle in p.message
    assert (p.file, p.line, p.path) == ("f.yaml", line, "")


def test_python_tags_are_refused():
    p = _problem("x: !!python/object/apply:os.system [ls]\n")
    assert "could not determine a constructor" in p.message


def test_yaml_error_in_a_scenario_file(spec):
    text = spec.edit(spec.BASE, "    count: 3\n", "    count: 3\n   oops: [\n")
    p = spec.problem(text)
    assert p.file == str(spec.root / "scenario.yaml")
    assert p.message.startswith("not valid YAML")
    assert p.line is not None and p.line >= spec.line_of(text, "oops")


def test_duplicate_key_in_a_scenario_file(spec):
    text = spec.edit(spec.BASE, "cores: 4,", "cores: 4, cores: 8,")
    p = spec.problem(text)
    assert p.path == "nodes.phone.units.cpu.cores"
    assert p.message.startswith("duplicate key 'cores'")
    assert p.line == spec.line_of(text, "cores: 8")


def test_non_utf8_file(spec):
    data = spec.BASE.encode() + b"# caf\xe9\n"
    p = spec.problem(data)
    assert p.message == "file is not UTF-8 text"
    assert p.line == spec.BASE.count("\n") + 1
    assert p.file == str(spec.root / "scenario.yaml")


def test_utf8_with_bom_and_non_ascii_text(spec):
    # the scenario name is an ASCII folder name (tests/faults/test_output_names.py): the
    # non-ASCII text goes in a model name
    text = spec.edit(spec.BASE, "  net: {zoo: alexnet}", "  café_☕: {zoo: alexnet}")
    path = spec.write(spec.edit(text, "model: net", "model: café_☕"))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert "café_☕" in load_scenario(path).models


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "42\n", "", "# only a comment\n"])
def test_non_mapping_document(spec, text):
    p = spec.problem(text)
    assert p.message == "a scenario must be a mapping of keys"
    assert p.file == str(spec.root / "scenario.yaml")


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    (p,) = info.value.problems
    assert (p.message, p.file) == ("file not found", str(path))


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read file"):
        load_scenario(tmp_path)
