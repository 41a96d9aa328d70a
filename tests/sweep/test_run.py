"""Running sweeps: the table, resume, failures, executors, the fast path."""

from __future__ import annotations

import dataclasses
import io
import json
import math

import pandas as pd
import pytest
from sweep.conftest import write_sweep

from simulator.engine import simulate
from simulator.errors import SocsimError
from simulator.results.fleets import LOAD_KEYS
from simulator.spec import parse_scenario
from simulator.spec.yamlio import load_yaml_file
from simulator.sweep import (
    SUMMARY_KEYS,
    load_sweep_table,
    prepare_sweep,
    run_sweep,
    run_task,
)
from simulator.sweep.points import set_path
from simulator.sweep.progress import Progress, format_duration

PATH = "links.uplink.bandwidth_mbps"


def test_the_table_has_one_row_per_point_and_replicate_in_the_documented_columns(
    bandwidth_sweep, tmp_path
):
    table = run_sweep(bandwidth_sweep, tmp_path / "out", quiet=True)
    assert list(table.columns[:8]) == [
        "point",
        PATH,
        "replicate",
        "seed",
        "status",
        "error",
        "decision",
        "scenario",
    ]
    assert list(table.columns[7:]) == [
        *SUMMARY_KEYS,
        "accuracy_top1",
        "peak_memory_bytes",
        "flexibility",
        *LOAD_KEYS,
    ]
    assert list(zip(table["point"], table["replicate"], strict=True)) == [
        (p, r) for p in range(4) for r in range(2)
    ]
    assert list(table[PATH]) == [1, 1, 10, 10, 100, 100, 1000, 1000]
    assert (table["status"] == "ok").all() and (table["error"] == "").all()
    # both replicates of a point share its seed; points differ
    assert table.groupby("point")["seed"].nunique().eq(1).all() and table["seed"].nunique() == 4
    meta = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert (meta["parameters"], meta["points"], meta["rows"]) == ([PATH], 4, 8)
    assert meta["columns"] == list(table.columns)


def test_a_row_is_the_run_of_its_resolved_scenario(bandwidth_sweep, tmp_path):
    table = run_sweep(bandwidth_sweep, tmp_path / "out", quiet=True)
    document = load_yaml_file(bandwidth_sweep)
    document.pop("sweep")
    row = table.iloc[5]  # 100 Mbit/s, replicate 1
    document = set_path(set_path(document, PATH, 100), "seed", int(row["seed"]))
    summary = simulate(
        parse_scenario(document, base_dir=bandwidth_sweep.parent), replicate=1
    ).summary
    for key in SUMMARY_KEYS:
        assert row[key] == summary[key] or (math.isnan(row[key]) and math.isnan(summary[key])), key
    assert row["decision"] == summary["decision"]


def test_summary_keys_are_exactly_the_run_summary(bandwidth_sweep):
    task = prepare_sweep(bandwidth_sweep).tasks[0]
    summary = simulate(task.resolve()).summary
    assert set(SUMMARY_KEYS) | {"seed", "replicate", "decision"} == set(summary)


def test_csv_and_parquet_tables_load_the_same(bandwidth_sweep, tmp_path):
    table = run_sweep(bandwidth_sweep, tmp_path / "out", quiet=True)
    from_csv = load_sweep_table(tmp_path / "out" / "sweep.csv")
    from_parquet = load_sweep_table(tmp_path / "out")
    pd.testing.assert_frame_equal(from_csv, table)
    pd.testing.assert_frame_equal(from_parquet, table)


class Interrupting:
    """Runs tasks, but the user presses Ctrl-C before the ``stop_at``-th one."""

    def __init__(self, stop_at: int):
        self.stop_at, self.calls = stop_at, []

    def __call__(self, task):
        if len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append((task.point, task.replicate))
        return run_task(task)


@pytest.mark.parametrize("stop_at", [0, 3, 7])
def test_resume_after_an_interrupt_loses_nothing_and_repeats_nothing(
    bandwidth_sweep, tmp_path, stop_at
):
    reference = run_sweep(bandwidth_sweep, tmp_path / "reference", quiet=True)
    out = tmp_path / "out"
    first = Interrupting(stop_at)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(bandwidth_sweep, out, quiet=True, run=first, batch_size=1)
    assert not (out / "sweep.csv").exists()
    partial = load_sweep_table(out)  # the journal: what finished before the interrupt
    assert len(partial) == stop_at
    second = Interrupting(10**6)
    table = run_sweep(bandwidth_sweep, out, quiet=True, run=second, batch_size=1)
    assert sorted(first.calls + second.calls) == [(p, r) for p in range(4) for r in range(2)]
    pd.testing.assert_frame_equal(table, reference)


def test_a_half_written_journal_line_is_ignored_on_resume(bandwidth_sweep, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(bandwidth_sweep, out, quiet=True, run=Interrupting(2), batch_size=1)
    with (out / "rows.jsonl").open("a") as handle:
        handle.write('{"point": 3, "repl')  # the write an interrupt cut short
    table = run_sweep(bandwidth_sweep, out, quiet=True)
    pd.testing.assert_frame_equal(table, run_sweep(bandwidth_sweep, tmp_path / "ref", quiet=True))


def test_another_sweep_in_the_same_folder_is_refused(bandwidth_sweep, tmp_path):
    run_sweep(bandwidth_sweep, tmp_path / "out", quiet=True)
    with pytest.raises(Exception, match="holds another sweep"):
        run_sweep(bandwidth_sweep, tmp_path / "out", quiet=True, replicates=3)


def test_a_misspelt_override_is_an_error_not_ignored(bandwidth_sweep, tmp_path):
    with pytest.raises(SocsimError, match=r"unknown sweep override\(s\) replicate; valid: design"):
        run_sweep(bandwidth_sweep, tmp_path / "out", replicate=3)


def test_a_failing_point_records_its_error_and_the_others_go_on(tmp_path):
    # a deadline no cut can meet: the placement fails at run time, for that point only
    path = write_sweep(
        tmp_path,
        {
            "parameters": {"placement.deadline_ms": [100000, 0.001, 100000]},
            "executor": {"name": "serial"},
        },
    )
    table = run_sweep(path, tmp_path / "out", quiet=True)
    assert list(table["status"]) == ["ok", "error", "ok"]
    bad = table.iloc[1]
    assert bad["error"].startswith("PlacementError: placement 'split_point'")
    assert (
        "deadline" in bad["error"] and bad["decision"] == "" and math.isnan(bad["latency_mean_s"])
    )
    assert table.iloc[0]["latency_mean_s"] == table.iloc[2]["latency_mean_s"] > 0


def contended_sweep(folder):
    """Poisson arrivals (random: the seeds matter), 4 points x 2 replicates."""
    return write_sweep(
        folder,
        {"parameters": {PATH: [1, 100], "links.uplink.latency_ms": [1, 30]}, "replicates": 2},
        workload=[
            {
                "app": "app",
                "model": "net",
                "source": "phone",
                "arrival": {"process": "poisson", "rate_hz": 5},  # random: the seeds matter
                "count": 4,
            }
        ],
    )


def test_serial_processes_and_dask_give_identical_tables(tmp_path):
    pytest.importorskip("distributed")
    path = contended_sweep(tmp_path)
    serial = run_sweep(path, tmp_path / "serial", quiet=True, executor="serial")
    assert serial["latency_mean_s"].nunique() > 4  # replicates differ: the seeds matter
    processes = run_sweep(path, tmp_path / "processes", quiet=True, executor="processes", workers=2)
    pd.testing.assert_frame_equal(processes, serial)
    # a LocalCluster of threads starts in a second; the slow test below uses processes
    dask = run_sweep(
        path,
        tmp_path / "dask",
        quiet=True,
        executor="dask",
        executor_options={"workers": 2, "processes": False},
    )
    pd.testing.assert_frame_equal(dask, serial)


@pytest.mark.slow
def test_a_dask_local_cluster_of_processes_gives_the_same_table(tmp_path):
    pytest.importorskip("distributed")
    path = contended_sweep(tmp_path)
    serial = run_sweep(path, tmp_path / "serial", quiet=True, executor="serial")
    dask = run_sweep(path, tmp_path / "dask", quiet=True, executor="dask", workers=2)
    pd.testing.assert_frame_equal(dask, serial)


def test_the_fast_path_agrees_with_the_engine_on_the_neurosurgeon_map(tmp_path):
    prepared = prepare_sweep("scenarios/sweeps/neurosurgeon_map.yaml")
    # one point per regime: phone only, split after pool5, after pool1, cloud only
    picks = {(10, 1), (147, 1), (1000, 1), (10000, 2)}
    tasks = [
        t
        for t in prepared.tasks
        if (round(t.values["links.uplink.bandwidth_mbps"]), t.values["links.uplink.latency_ms"])
        in picks
    ]
    assert len(tasks) == 4
    engine = [run_task(t) for t in tasks]
    fast = [run_task(dataclasses.replace(t, fast=True)) for t in tasks]
    assert sorted(r["decision"] for r in engine) == [
        "cloud",
        "device",
        "split@pool1",
        "split@pool5",
    ]
    for slow, quick in zip(engine, fast, strict=True):
        for key in (
            "decision",
            "latency_mean_s",
            "latency_p99_s",
            "latency_max_s",
            "throughput_rps",
            "requests",
            "completed",
            "dropped",
            "seed",
        ):
            assert quick[key] == slow[key], key
        assert math.isnan(quick["energy_j"]) and slow["energy_j"] > 0


def test_the_fast_path_stands_aside_where_requests_contend(bandwidth_sweep):
    from simulator.sweep import fast_path_applies

    task = prepare_sweep(bandwidth_sweep).tasks[0]
    assert fast_path_applies(task.resolve())
    document = dict(task.resolve().document)
    crowded = parse_scenario(set_path(document, "workload[0].count", 2))
    assert not fast_path_applies(crowded)
    row = run_task(dataclasses.replace(task, scenario=crowded, fast=True))
    assert row["energy_j"] > 0  # the engine ran


def test_the_progress_bar_shows_runs_rate_and_eta():
    stream = io.StringIO()
    progress = Progress(200, done=20, stream=stream, enabled=True)
    progress.started -= 10.0  # 10 s ago
    progress.done = 60  # 40 runs in 10 s this session
    assert progress.line(progress.started + 10.0).endswith("60/200 runs  4/s  ETA 0:00:35")
    assert format_duration(3725) == "1:02:05" and format_duration(float("nan")) == "--:--"
    quiet = Progress(5, stream=io.StringIO(), enabled=None)  # not a terminal
    quiet.update()
    quiet.close()
    assert quiet.stream.getvalue() == ""
