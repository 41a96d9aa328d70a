"""Issue 16 items 4-6: results appear whole or not at all, whatever fails while writing.

Every file socsim writes passes through ``simulator.output.atomic._write_file``; the
tests make it fail with ENOSPC at each call in turn (every write site), interrupt it,
and fill a real 64 KB tmpfs. On the old code a full disk left a partial folder (tables
without ``summary.json`` or ``scenario.resolved.yaml``) and a raw traceback.
"""

from __future__ import annotations

import errno
import json

import pytest
from faults.output_fixtures import tiny_document, tmpfs, tree, write_scenario

import simulator.output.atomic as atomic
from simulator.cli import main
from simulator.engine import simulate
from simulator.errors import OutputError, WriteError
from simulator.exitcodes import EXIT_INVALID, EXIT_OK, EXIT_RUNTIME
from simulator.spec import parse_scenario


@pytest.fixture(scope="module")
def result():
    return simulate(parse_scenario(tiny_document()))


def _fail_at(monkeypatch, call: int, error: BaseException) -> list[int]:
    """Make the ``call``-th file write raise ``error``; returns the running count."""
    real, count = atomic._write_file, [0]

    def write(path, data):
        count[0] += 1
        if count[0] == call:
            raise error
        real(path, data)

    monkeypatch.setattr(atomic, "_write_file", write)
    return count


def test_a_full_disk_at_any_write_leaves_no_folder(result, tmp_path, monkeypatch):
    count = _fail_at(monkeypatch, 0, OSError())
    written = result.write(tmp_path / "ok")
    files = count[0]
    assert files == len(written) == len(tree(tmp_path / "ok")) > 30
    for call in range(1, files + 1):
        _fail_at(monkeypatch, call, OSError(errno.ENOSPC, "No space left on device"))
        with pytest.raises(WriteError, match="No space left on device"):
            result.write(tmp_path / "out")
        left = [p for p in tree(tmp_path) if not p.startswith("ok")]
        assert left == [], f"write {call} of {files} left {left}"


def test_an_interrupt_while_writing_leaves_no_folder(result, tmp_path, monkeypatch):
    _fail_at(monkeypatch, 7, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        result.write(tmp_path / "out")
    assert tree(tmp_path) == []


def test_a_failed_rewrite_keeps_the_previous_results_and_other_files(result, tmp_path, monkeypatch):
    out = tmp_path / "run"
    result.write(out)
    (out / "score").mkdir()
    (out / "score" / "scorecard.csv").write_text("mine\n")
    before = {p: (out / p).read_bytes() for p in tree(out) if (out / p).is_file()}
    _fail_at(monkeypatch, 12, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(WriteError):
        result.write(out)
    assert {p: (out / p).read_bytes() for p in tree(out) if (out / p).is_file()} == before


def test_the_command_says_what_was_kept_and_exits_3(tmp_path, monkeypatch, capsys):
    scenario = write_scenario(tmp_path, tiny_document())
    _fail_at(monkeypatch, 20, OSError(errno.ENOSPC, "No space left on device"))
    assert main(["run", str(scenario), "-o", str(tmp_path / "out")]) == EXIT_RUNTIME
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing printed before the results are safe
    assert "No space left on device" in captured.err and "nothing was written" in captured.err
    assert "Traceback" not in captured.err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["report", "plot"])
def test_report_and_plot_on_a_full_disk(result, tmp_path, monkeypatch, capsys, command):
    result.write(tmp_path / "run")
    _fail_at(monkeypatch, 1, OSError(errno.ENOSPC, "No space left on device"))
    argv = [command, *(["utilisation"] if command == "plot" else []), str(tmp_path / "run")]
    assert main([*argv, "-o", str(tmp_path / "fig.png")]) == EXIT_RUNTIME
    assert not list(tmp_path.glob("*fig.png*")) and "Traceback" not in capsys.readouterr().err


@pytest.fixture
def small_tmpfs(tmp_path):
    with tmpfs(tmp_path / "small", "size=64k") as mounted:
        if not mounted:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        yield tmp_path / "small"


def test_a_real_full_disk(tmp_path, small_tmpfs, capsys):
    scenario = write_scenario(tmp_path, tiny_document())
    assert main(["run", str(scenario), "-o", str(small_tmpfs / "out")]) == EXIT_RUNTIME
    assert tree(small_tmpfs) == []  # nothing half-written, no temporary left
    assert "No space left on device" in capsys.readouterr().err


def test_a_column_parquet_cannot_store_is_named_and_nothing_written(tmp_path):
    """Item 6: an integer beyond int64 crashed Parquet writing part-way through the folder."""
    big = simulate(parse_scenario(tiny_document()))
    big.summary = {**big.summary, "seed": 2**70}
    with pytest.raises(OutputError, match="column 'seed'"):
        big.write(tmp_path / "out")
    assert tree(tmp_path) == []


@pytest.mark.parametrize("replicate", ["-1", str(2**63), str(2**70)])
def test_replicate_out_of_int64_is_a_clear_error(tmp_path, capsys, replicate):
    scenario = write_scenario(tmp_path, tiny_document())
    argv = ["run", str(scenario), "--replicate", replicate, "-o", str(tmp_path / "o")]
    assert main(argv) == EXIT_INVALID
    assert "--replicate takes 0 to 2^63 - 1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_largest_replicate_runs(tmp_path):
    scenario = write_scenario(tmp_path, tiny_document())
    argv = ["run", str(scenario), "--replicate", str(2**63 - 1), "-o", str(tmp_path / "o")]
    assert main(argv) == EXIT_OK
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["replicate"] == 2**63 - 1
