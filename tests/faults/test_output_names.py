"""Issue 16 item 1: a scenario's ``name:`` never chooses where results land outside runs/.

On the old code ``name: '../../x'`` or an absolute path wrote (and overwrote) the run's
tables wherever it pointed. Now the name is a folder-safe slug, checked at load and
again when the default folder is built.
"""

from __future__ import annotations

import pytest
from faults.output_fixtures import tiny_document, tree, write_scenario
from hypothesis import given
from hypothesis import strategies as st

from simulator.cli import main
from simulator.errors import OutputError, ScenarioError
from simulator.exitcodes import EXIT_INVALID, EXIT_OK
from simulator.output import default_output_dir, name_problem, suggest_slug
from simulator.spec import parse_scenario


@pytest.mark.parametrize("command", ["run", "sweep", "score"])
@pytest.mark.parametrize("escape", ["../../x", "ABSOLUTE", "a/../../b", ".hidden", "..", "a\\b"])
def test_an_escaping_name_writes_nothing_anywhere(tmp_path, monkeypatch, capsys, escape, command):
    name = str(tmp_path / "elsewhere" / "x") if escape == "ABSOLUTE" else escape
    scenario = write_scenario(tmp_path / "in", tiny_document(name=name))
    work = tmp_path / "a" / "b" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    before = tree(tmp_path)
    argv = [command, str(scenario)] + (["--set", "seed=1,2"] if command == "sweep" else [])
    assert main(argv) == EXIT_INVALID
    assert tree(tmp_path) == before  # not a file written, not a folder made
    err = capsys.readouterr().err
    assert "name:" in err and "did you mean" in err


def test_the_error_names_the_key_the_rule_and_a_slug():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(tiny_document(name="../../etc/cron.d/x"))
    (problem,) = info.value.problems
    assert problem.path == "name"
    assert "'/'" in problem.message and "ASCII letters" in problem.message
    assert problem.suggestion == "etc_cron.d_x"


def test_the_default_folders_are_built_inside_runs_only():
    assert str(default_output_dir("map")) == "runs/map"
    assert str(default_output_dir("map", "_sweep")) == "runs/map_sweep"
    assert str(default_output_dir("map", "", "score")) == "runs/map/score"
    for bad in ("../x", "/abs", "..", "", "a" * 101):  # defence in depth: no loader needed
        with pytest.raises(OutputError, match="give -o"):
            default_output_dir(bad)


def test_a_good_name_lands_in_runs(tmp_path, monkeypatch):
    scenario = write_scenario(tmp_path, tiny_document(name="phone-cloud_v1.2"))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(scenario)]) == EXIT_OK
    assert (tmp_path / "runs" / "phone-cloud_v1.2" / "summary.json").is_file()


@given(st.text(max_size=150))
def test_every_suggested_slug_is_a_valid_name(text):
    slug = suggest_slug(text)
    assert name_problem(slug) is None
    if name_problem(text) is None:
        assert slug == text.strip("._")[:100].rstrip(".") or slug == "scenario"
