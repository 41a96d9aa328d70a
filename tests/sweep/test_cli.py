"""``socsim sweep`` and the ``sweep:`` section seen from ``socsim run``."""

from __future__ import annotations

import pytest
from sweep.conftest import write_sweep

from simulator.cli import main
from simulator.errors import ScenarioError
from simulator.exitcodes import EXIT_INVALID
from simulator.sweep import load_sweep_table
from simulator.sweep.cli import parse_set


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("links.up.latency_ms=5,50", ("links.up.latency_ms", [5, 50])),
        ("placement.policy=heft,cpop", ("placement.policy", ["heft", "cpop"])),
        ("a.b=1e6,2.5,true", ("a.b", [1e6, 2.5, True])),
        ("a.b=10:100:30", ("a.b", {"start": 10, "stop": 100, "step": 30})),
        ("a.b=0.5:2", ("a.b", {"start": 0.5, "stop": 2})),
        ("a.b=log(10,1e4,4)", ("a.b", {"start": 10, "stop": 1e4, "num": 4, "log": True})),
        ("a.b=lin(0,1,5)", ("a.b", {"start": 0, "stop": 1, "num": 5, "log": False})),
    ],
)
def test_set_values_read_as_lists_and_ranges(text, expected):
    assert parse_set(text) == expected


@pytest.mark.parametrize("text", ["a.b", "=1,2", "a.b=", "a.b=1:2:3:4", "a.b=log(1,2)"])
def test_malformed_set_values_are_errors(text):
    with pytest.raises(ScenarioError):
        parse_set(text)


def test_sweep_command_writes_the_table_and_reports_failures(tmp_path, capsys):
    path = write_sweep(tmp_path, None)
    out = tmp_path / "out"
    argv = ["sweep", str(path), "--set", "placement.deadline_ms=100000,0.001", "-o", str(out)]
    assert main([*argv, "--executor", "serial", "--replicates", "2", "-q"]) == 0
    text = capsys.readouterr().out
    assert "2 point(s) x 2 replicate(s), design grid, executor serial" in text
    assert f"wrote 4 row(s) to {out}/ (2 failed)" in text
    assert "point 1 replicate 0: PlacementError" in text
    table = load_sweep_table(out)
    assert list(table["placement.deadline_ms"]) == [100000, 100000, 0.001, 0.001]


def test_sweep_command_exits_2_on_a_bad_path_before_running(tmp_path, capsys):
    path = write_sweep(tmp_path, None)
    argv = [
        "sweep",
        str(path),
        "--set",
        "links.uplink.bandwith_mbps=1,2",
        "-o",
        str(tmp_path / "o"),
    ]
    assert main(argv) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "links.uplink.bandwith_mbps" in err and "did you mean 'bandwidth_mbps'?" in err
    assert not (tmp_path / "o").exists()


def test_executor_options_are_checked_against_the_executor(tmp_path, capsys):
    path = write_sweep(tmp_path, None)
    argv = ["sweep", str(path), "--set", "workload[0].count=1", "--executor", "serial"]
    assert main([*argv, "--scheduler", "tcp://h:8786"]) == EXIT_INVALID
    assert "unknown key 'scheduler' in serial executor options" in capsys.readouterr().err


def test_run_accepts_and_ignores_the_sweep_section(tmp_path, capsys):
    assert main(["run", "scenarios/sweeps/neurosurgeon_map.yaml", "-o", str(tmp_path)]) == 0
    assert "decision                       split@pool5" in capsys.readouterr().out


def test_run_still_validates_the_sweep_section(tmp_path, capsys):
    path = write_sweep(tmp_path, {"parameters": {"a.b": [1]}, "desing": "grid"})
    assert main(["run", str(path), "-o", str(tmp_path / "o")]) == EXIT_INVALID
    assert "did you mean 'design'?" in capsys.readouterr().err
