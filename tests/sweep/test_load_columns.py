"""A fleet sweep's rows say how loaded the shared medium and the edge server were: the
figures of a tiny fleet worked out by hand (simulator/results/fleets.py, load_figures)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml
from spec.test_fleets import fleet_doc

from simulator.errors import SocsimError
from simulator.results.fleets import LOAD_KEYS, load_figures
from simulator.sweep import load_sweep_table, run_sweep


def tiny_fleet_sweep(folder) -> str:
    """``count`` phones (swept: 2, 3) on one 8 Mbit/s medium, each sending one 1 MB input
    at t = 0 to the access point's node, here an edge server (role ``edge``) of
    1 GFLOP/s that runs a 0.5-GFLOP op on it (0.5 s); the output (no elements) comes back
    at once (the fleet of tests/spec/test_fleets.py)."""
    document = fleet_doc(2)
    server = document["nodes"]["cloud"]
    server["role"] = "edge"
    server["units"]["gpu"]["peak_gflops"]["fp32"] = 1
    document["models"]["m"]["ops"][0]["flops"] = 5e8
    document["sweep"] = {
        "executor": {"name": "serial"},
        "parameters": {"nodes.phone.fleet.count": [2, 3]},
    }
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return str(path)


def test_a_tiny_fleet_sweep_has_its_airtime_and_edge_load_by_hand(tmp_path):
    run_sweep(tiny_fleet_sweep(tmp_path), tmp_path / "out")
    table = load_sweep_table(tmp_path / "out")
    assert list(table.columns[-len(LOAD_KEYS) :]) == list(LOAD_KEYS)
    for n, row in zip([2, 3], table.itertuples(), strict=True):
        # n inputs of 8 Mbit share 8 Mbit/s: every one is in at n s (n s of airtime);
        # the edge then runs the n ops one after the other, 0.5 s each
        d = 0.5
        last_s = n + n * d  # the last completion; the first arrival is at 0
        assert row.airtime_busy_s == pytest.approx(n)
        assert row.airtime_utilisation == pytest.approx(n / last_s)  # 2/3 at both counts
        assert row.edge_busy_s == pytest.approx(n * d)
        assert row.edge_utilisation == pytest.approx(n * d / last_s)  # 1/3
        # the ops wait 0, d, ..., (n - 1) d for the unit: (n - 1) d / 2 on average
        assert row.edge_op_wait_mean_s == pytest.approx((n - 1) * d / 2)
        assert row.device_busy_s == 0.0 and row.device_utilisation == 0.0
        assert math.isnan(row.cloud_busy_s) and math.isnan(row.cloud_utilisation)
        assert row.latency_max_s == pytest.approx(last_s)
        assert row.dropped == 0


def test_load_figures_take_the_busiest_unit_of_each_role_and_the_busiest_medium():
    units = pd.DataFrame(
        {
            "role": ["edge", "edge", "cloud", "device"],
            "busy_s": [2.0, 3.0, 1.0, 0.0],
            "utilisation": [0.2, 0.3, 0.1, 0.0],
            "queue_wait_mean_s": [0.01, 0.02, 0.0, 0.0],
        }
    )
    media = pd.DataFrame({"airtime_busy_s": [4.0, 6.0], "airtime_utilisation": [0.4, 0.6]})
    figures = load_figures(units, media)
    assert figures["edge_busy_s"] == 3.0 and figures["edge_utilisation"] == 0.3
    assert figures["edge_op_wait_mean_s"] == 0.02
    assert figures["cloud_busy_s"] == 1.0
    assert figures["airtime_busy_s"] == 6.0 and figures["airtime_utilisation"] == 0.6
    empty = load_figures(units.iloc[:0], media.iloc[:0])
    assert all(math.isnan(v) for v in empty.values())


def test_the_sweep_report_tabulates_the_load_per_point(tmp_path):
    from analysis.report import _sweep_tables
    from analysis.sources import load_source

    run_sweep(tiny_fleet_sweep(tmp_path), tmp_path / "out")
    (title, points), *_ = _sweep_tables(load_source(tmp_path / "out"))
    assert title == "points (means over replicates)"
    assert points["edge_utilisation"].tolist() == pytest.approx([1 / 3, 1 / 3])
    assert points["airtime_utilisation"].tolist() == pytest.approx([2 / 3, 2 / 3])
    assert points["dropped"].tolist() == [0, 0]
    assert "cloud_utilisation" not in points  # no cloud: the column would be NaN only


def test_a_folder_written_before_the_load_figures_is_refused_clearly(tmp_path):
    path = tiny_fleet_sweep(tmp_path)
    run_sweep(path, tmp_path / "out")
    meta_path = tmp_path / "out" / "sweep.json"
    meta = json.loads(meta_path.read_text())
    meta["fingerprint_parts"]["version"] = 2  # as written before the load columns
    meta["fingerprint"] = "0123456789abcdef"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SocsimError, match="before sweep rows carried the load figures"):
        run_sweep(path, tmp_path / "out")
    run_sweep(path, tmp_path / "out", restart=True)  # the way on the message names
    assert load_sweep_table(tmp_path / "out")["edge_busy_s"].tolist() == pytest.approx([1, 1.5])


def test_a_folder_written_before_views_owned_no_memory_is_refused_clearly(tmp_path):
    """Parts version 3 rows counted a view's output as memory of its own; version 4
    rows do not (and cost non-square convs by the predictor): never mixed, and the
    message lists every change since the folder's version."""
    path = tiny_fleet_sweep(tmp_path)
    run_sweep(path, tmp_path / "out")
    meta_path = tmp_path / "out" / "sweep.json"
    meta = json.loads(meta_path.read_text())
    meta["fingerprint_parts"]["version"] = 3
    meta["fingerprint"] = "0123456789abcdef"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SocsimError, match="view owned no activation memory") as info:
        run_sweep(path, tmp_path / "out")
    assert "load figures" not in str(info.value)  # a version-3 folder had those
    meta["fingerprint_parts"]["version"] = 2
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SocsimError, match=r"load figures .*; before a reshape view"):
        run_sweep(path, tmp_path / "out")
