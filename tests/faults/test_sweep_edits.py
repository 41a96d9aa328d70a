"""An edit between a kill and the resume: refused (what differs is named), never a table
mixing both versions; ``--restart`` runs the edited sweep from scratch."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from faults.sweep_helpers import BANDWIDTH, CrashError, crash_after, small_sweep, socsim

from simulator.sweep import SweepFolderError, load_sweep_table, run_sweep


def killed(path, out, fast=None):
    with pytest.MonkeyPatch.context() as patch:
        crash_after(patch, 3)
        with pytest.raises(CrashError):
            run_sweep(path, out, quiet=True, batch_size=1, fast=fast)


def edit(path, change):
    document = yaml.safe_load(path.read_text())
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def slower_uplink(document):
    document["links"]["uplink"]["latency_ms"] = 40


@pytest.mark.parametrize("fast", [None, True])
def test_an_edited_scenario_is_refused_on_resume_with_and_without_fast(tmp_path, fast):
    path = small_sweep(tmp_path)
    out = tmp_path / "out"
    killed(path, out, fast)
    edit(path, slower_uplink)
    with pytest.raises(SweepFolderError) as info:
        run_sweep(path, out, quiet=True, fast=fast)
    message = str(info.value)
    assert "the scenario (after includes and presets) was edited" in message
    assert "--restart" in message and "-o" in message
    assert len(load_sweep_table(out)) == 3 and not (out / "sweep.csv").exists()  # kept


def test_restart_runs_the_edited_sweep_from_scratch(tmp_path):
    path = small_sweep(tmp_path)
    out = tmp_path / "out"
    killed(path, out)
    edit(path, slower_uplink)
    notes = []
    table = run_sweep(path, out, quiet=True, restart=True, notify=notes.append)
    pd.testing.assert_frame_equal(table, run_sweep(path, tmp_path / "fresh", quiet=True))
    assert any("--restart: discarded rows.jsonl" in n for n in notes)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"replicates": 3}, "--replicates: 2 before, 3 now"),
        ({"fast": True}, "--fast: off before, on now"),
        ({"parameters": {BANDWIDTH: [1, 10, 100, 2000]}}, "the swept paths or values"),
        ({"design": "zip"}, "--design: grid before, zip now"),
    ],
)
def test_a_flag_that_changes_rows_is_refused_by_name(tmp_path, changes, named):
    path = small_sweep(tmp_path)
    out = tmp_path / "out"
    killed(path, out)
    with pytest.raises(SweepFolderError, match=named):
        run_sweep(path, out, quiet=True, **changes)


def test_flags_that_change_no_row_resume(tmp_path):
    path = small_sweep(tmp_path)
    out = tmp_path / "out"
    killed(path, out)
    table = run_sweep(path, out, quiet=True, executor="processes", workers=1)
    pd.testing.assert_frame_equal(table, run_sweep(path, tmp_path / "fresh", quiet=True))


def test_an_edited_bandwidth_trace_is_refused(tmp_path):
    trace = tmp_path / "bw.csv"
    trace.write_text("time_s,bandwidth_mbps\n0,50\n1,20\n")
    path = small_sweep(tmp_path)
    edit(path, lambda d: d["links"]["uplink"].update(bandwidth_trace_file="bw.csv"))
    out = tmp_path / "out"
    killed(path, out)
    meta = json.loads((out / "sweep.json").read_text())
    assert str(trace.resolve()) in meta["fingerprint_parts"]["files"]
    trace.write_text("time_s,bandwidth_mbps\n0,50\n1,5\n")
    with pytest.raises(SweepFolderError, match=rf"{trace.resolve()} changed"):
        run_sweep(path, out, quiet=True)


def test_the_command_refuses_an_edit_with_a_message_not_a_traceback(tmp_path):
    path = small_sweep(tmp_path)
    out = tmp_path / "out"
    killed(path, out)
    edit(path, slower_uplink)
    done = socsim("sweep", str(path), "-o", str(out), "-q")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "holds another sweep (the scenario (after includes and presets) was edited)" in (
        done.stderr
    )
    again = socsim("sweep", str(path), "-o", str(out), "-q", "--restart")
    assert again.returncode == 0, again.stderr
    assert "note: --restart: discarded" in again.stderr
