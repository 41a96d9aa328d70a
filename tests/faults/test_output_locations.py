"""Issue 16 item 5: an unusable output location is refused before any work.

On the old code ``-o`` at an existing file, under a file or in a read-only folder gave a
raw traceback *after* the simulation, and the results were lost. Now every command checks
its locations first: exit status 1, one line, nothing simulated, nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faults.output_fixtures import tiny_document, tmpfs, tree, write_scenario

import analysis.kinds
import analysis.report
import simulator.engine
import simulator.score
import simulator.sweep.runner
from simulator.cli import main
from simulator.exitcodes import EXIT_INVALID


@pytest.fixture
def read_only_dir(tmp_path):
    """A read-only filesystem (root ignores permission bits, so a ro tmpfs mount)."""
    folder = tmp_path / "ro"
    with tmpfs(folder, "ro,size=64k") as mounted:
        if mounted:
            yield folder
            return
    folder.chmod(0o555)  # without mount rights: permission bits (not root)
    if _writable(folder):
        pytest.skip("neither a read-only mount nor a read-only folder is possible here")
    yield folder
    folder.chmod(0o755)


def _writable(folder: Path) -> bool:
    try:
        (folder / "probe").mkdir()
    except OSError:
        return False
    (folder / "probe").rmdir()
    return True


def _forbid(monkeypatch, module, name):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{name} ran although the output location is unusable")

    monkeypatch.setattr(module, name, refuse)


def _bad_locations(tmp_path: Path, read_only: Path) -> dict[str, Path]:
    (tmp_path / "file").write_text("keep me\n")
    return {
        "a file": tmp_path / "file",
        "under a file": tmp_path / "file" / "out",
        "read-only": read_only / "out",
    }


@pytest.mark.parametrize("where", ["a file", "under a file", "read-only"])
def test_run_refuses_before_simulating(tmp_path, read_only_dir, monkeypatch, capsys, where):
    scenario = write_scenario(tmp_path / "in", tiny_document())
    out = _bad_locations(tmp_path, read_only_dir)[where]
    _forbid(monkeypatch, simulator.engine, "simulate")
    before = tree(tmp_path)
    assert main(["run", str(scenario), "-o", str(out)]) == EXIT_INVALID
    assert tree(tmp_path) == before and (tmp_path / "file").read_text() == "keep me\n"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(out) in err


@pytest.mark.parametrize("where", ["a file", "under a file", "read-only"])
def test_sweep_and_score_refuse_before_running(tmp_path, read_only_dir, monkeypatch, where):
    scenario = write_scenario(tmp_path / "in", tiny_document())
    out = _bad_locations(tmp_path, read_only_dir)[where]
    _forbid(monkeypatch, simulator.sweep.runner, "run_prepared")
    _forbid(monkeypatch, simulator.score, "score_scenario")
    sweep = ["sweep", str(scenario), "--set", "workload[0].count=1,2", "-o", str(out)]
    assert main(sweep) == EXIT_INVALID
    assert main(["score", str(scenario), "-o", str(out)]) == EXIT_INVALID


@pytest.mark.parametrize("where", ["a folder", "under a file", "read-only"])
def test_report_and_plot_refuse_before_drawing(tmp_path, read_only_dir, monkeypatch, where):
    run = tmp_path / "run"
    assert main(["run", str(write_scenario(tmp_path / "in", tiny_document())), "-o", str(run)]) == 0
    out = {"a folder": run, **_bad_locations(tmp_path, read_only_dir)}[where]
    out = out / "report.html" if where == "read-only" else out
    _forbid(monkeypatch, analysis.report, "build_report")
    _forbid(monkeypatch, analysis.kinds, "make_plot")
    before = tree(tmp_path)
    assert main(["report", str(run), "-o", str(out)]) == EXIT_INVALID
    assert main(["plot", "utilisation", str(run), "-o", str(out)]) == EXIT_INVALID
    assert tree(tmp_path) == before
