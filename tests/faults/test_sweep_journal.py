"""Damaged sweep folders: every bad journal line stops the resume with its line number
and a --repair choice; a torn last line is dropped with a note; damaged or missing
metadata and files replaced by folders are clear errors, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from faults.sweep_helpers import CrashError, crash_after, env, small_sweep, socsim

from simulator.sweep import (
    SweepBusyError,
    SweepFolderError,
    SweepJournalError,
    load_sweep_table,
    run_sweep,
)
from simulator.sweep.journal import encode
from simulator.sweep.store import SweepStore


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A scenario, the uninterrupted table, and a folder killed after four runs."""
    folder = tmp_path_factory.mktemp("journal")
    path = small_sweep(folder)
    expected = run_sweep(path, folder / "reference", quiet=True)
    return path, expected


def killed(path, out):
    with pytest.MonkeyPatch.context() as patch:
        crash_after(patch, 4)
        with pytest.raises(CrashError):
            run_sweep(path, out, quiet=True, batch_size=1)
    return out / "rows.jsonl"


def lines(journal):
    return journal.read_text().splitlines(keepends=True)


def first_row(journal):
    return json.loads(lines(journal)[0])


def forge(journal, change):
    """A line with a correct fingerprint and hash whose row is ``change``d."""
    entry = first_row(journal)
    row = entry["row"]
    change(row)
    return encode(row, entry["fingerprint"])


BAD_LINES = {
    "not JSON": lambda j: "this is not json\n",
    "not a journal line": lambda j: '{"point": 0, "replicate": 0}\n',
    "a row of another sweep": lambda j: lines(j)[0].replace(
        first_row(j)["fingerprint"], "0123456789abcdef"
    ),
    "the row was altered": lambda j: lines(j)[0].replace('"status":"ok"', '"status":"no"'),
    "'point' is 'zero', not an integer": lambda j: forge(j, lambda r: r.update(point="zero")),
    "point 999 is outside this sweep": lambda j: forge(j, lambda r: r.update(point=999)),
    "'latency_mean_s' is 'fast', not a number": lambda j: forge(
        j, lambda r: r.update(latency_mean_s="fast")
    ),
    "point 0 replicate 0 is already on line 1 with other values": lambda j: forge(
        j, lambda r: r.update(latency_mean_s=r["latency_mean_s"] * 2)
    ),
}


@pytest.mark.parametrize("what", list(BAD_LINES))
def test_a_bad_line_stops_the_resume_naming_it_and_repair_recomputes(done, tmp_path, what):
    path, expected = done
    journal = killed(path, tmp_path / "out")
    text = journal.read_text()
    journal.write_text(text + BAD_LINES[what](journal) + lines(journal)[1])  # not the last
    with pytest.raises(SweepJournalError) as info:
        run_sweep(path, tmp_path / "out", quiet=True)
    assert info.value.bad[0][0] == 5 and what in info.value.bad[0][1]
    assert "line 5:" in str(info.value) and "--repair" in str(info.value)
    assert journal.read_text().startswith(text)  # nothing changed
    with pytest.raises(SweepJournalError):
        load_sweep_table(tmp_path / "out")
    notes = []
    table = run_sweep(path, tmp_path / "out", quiet=True, repair=True, notify=notes.append)
    pd.testing.assert_frame_equal(table, expected)
    assert any("--repair: dropped 1 bad line(s)" in note for note in notes)


def test_an_identical_repeated_row_is_harmless(done, tmp_path):
    path, expected = done
    journal = killed(path, tmp_path / "out")
    journal.write_text(journal.read_text() + lines(journal)[0])
    pd.testing.assert_frame_equal(run_sweep(path, tmp_path / "out", quiet=True), expected)


def test_a_torn_last_line_is_dropped_with_a_note(done, tmp_path):
    path, expected = done
    journal = killed(path, tmp_path / "out")
    journal.write_text(journal.read_text() + lines(journal)[1][:40])
    assert len(load_sweep_table(tmp_path / "out")) == 4  # readable meanwhile
    notes = []
    table = run_sweep(path, tmp_path / "out", quiet=True, notify=notes.append)
    pd.testing.assert_frame_equal(table, expected)
    assert notes == [
        f"dropped the torn last line of {journal} (a write cut short by a kill); "
        "its run is done again"
    ]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda out: (out / "sweep.json").write_text("{not json"), "not readable sweep metadata"),
        (lambda out: (out / "sweep.json").write_text("[1, 2]"), "not sweep metadata"),
        (lambda out: (out / "sweep.json").unlink(), "has no sweep.json beside it"),
        (
            lambda out: (out / "sweep.json").write_text(json.dumps({"fingerprint": "x"})),
            "'points' is not an integer",
        ),
    ],
)
def test_damaged_or_missing_metadata_is_a_clear_error_and_restart_recovers(
    done, tmp_path, damage, message
):
    path, expected = done
    out = tmp_path / "out"
    killed(path, out)
    damage(out)
    with pytest.raises(SweepFolderError, match=message):
        run_sweep(path, out, quiet=True)
    pd.testing.assert_frame_equal(run_sweep(path, out, quiet=True, restart=True), expected)


@pytest.mark.parametrize("name", ["rows.jsonl", "sweep.json"])
def test_a_folder_where_a_file_belongs_is_a_clear_error(done, tmp_path, name):
    path, _ = done
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    with pytest.raises(SweepFolderError, match=f"{out / name} is not a file"):
        run_sweep(path, out, quiet=True)


def test_the_command_reports_a_bad_line_without_a_traceback(done, tmp_path):
    path, _ = done
    journal = killed(path, tmp_path / "out")
    journal.write_text(journal.read_text() + "[]\n" + lines(journal)[0])
    result = socsim("sweep", str(path), "-o", str(tmp_path / "out"), "-q")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"{journal}: 1 bad line(s)" in result.stderr and "line 5: not a journal" in (
        result.stderr
    )


def test_a_second_sweep_into_a_busy_folder_is_refused_naming_the_holder(done, tmp_path):
    path, expected = done
    out = tmp_path / "out"
    out.mkdir()
    holder = SweepStore(out)
    holder.lock()
    try:
        with pytest.raises(SweepBusyError, match=rf"another sweep \(process {os.getpid()}\)"):
            run_sweep(path, out, quiet=True)
    finally:
        holder.close()
    pd.testing.assert_frame_equal(run_sweep(path, out, quiet=True), expected)


def test_a_lock_held_by_another_process_is_refused_and_freed_when_it_dies(done, tmp_path):
    path, expected = done
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from simulator.sweep.store import SweepStore; "
            f"SweepStore({str(out)!r}).lock(); print('locked', flush=True); time.sleep(600)",
        ],
        env=env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(SweepBusyError, match=rf"another sweep \(process {holder.pid}\)"):
            run_sweep(path, out, quiet=True)
        assert not (out / "rows.jsonl").exists()  # nothing ran
    finally:
        holder.kill()  # SIGKILL: no clean-up code runs; the OS frees the lock
        holder.wait()
    pd.testing.assert_frame_equal(run_sweep(path, out, quiet=True), expected)
