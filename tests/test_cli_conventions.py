"""CLI conventions of issue 21, item 2: ``-q``/``-v`` through :mod:`logging`, ``--json``
on stdout, ``socsim run --set PATH=VALUE``. Exit statuses of their errors are in
tests/faults/test_exit_codes.py."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import pytest
from faults.output_fixtures import tiny_document, write_scenario

import simulator.cli as cli
import simulator.network.radio_range as radio_range
from simulator.cli import main
from simulator.cli_logging import level_of
from simulator.errors import SocsimWarning

ROOT = Path(__file__).resolve().parents[1]
ALEXNET = ROOT / "scenarios/examples/alexnet_phone_cloud.yaml"


def _json_run(capsys, *args: str, stderr: list | None = None) -> dict:
    assert main(["run", *args, "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1  # one object, one line: nothing else on stdout
    if stderr is not None:
        stderr.append(captured.err)
    return json.loads(captured.out)


def test_run_json_is_the_summary_the_apps_and_the_folder(tmp_path, capsys):
    scenario = write_scenario(tmp_path, tiny_document())
    out = tmp_path / "o"
    document = _json_run(capsys, str(scenario), "-o", str(out))
    written = json.loads((out / "summary.json").read_text())
    assert document["summary"] == written  # the same figures as summary.json
    assert document["output_dir"] == str(out)
    assert document["files"] == len(list(out.iterdir()))
    (app,) = document["apps"]
    assert app["decision"] == written["decision"]
    # one app: its figures are the run's
    assert app["requests"] == app["completed"] == written["completed"] == 2
    assert app["latency_mean_s"] == pytest.approx(written["latency_mean_s"], rel=1e-12)


def test_run_set_equals_the_same_file_edited(tmp_path, capsys):
    edited = tiny_document()
    edited["links"]["uplink"]["bandwidth_mbps"] = 5
    edited["workload"][0]["count"] = 3
    plain = write_scenario(tmp_path, tiny_document())
    by_hand = write_scenario(tmp_path, edited, "edited.yaml")
    set_values = _json_run(
        capsys, str(plain), "-o", str(tmp_path / "a"),
        "--set", "links.uplink.bandwidth_mbps=5", "--set", "workload[0].count=3",
    )  # fmt: skip
    edited_file = _json_run(capsys, str(by_hand), "-o", str(tmp_path / "b"))
    assert set_values["summary"] == edited_file["summary"]  # bit for bit
    assert set_values["summary"]["requests"] == 3
    unchanged = _json_run(capsys, str(plain), "-o", str(tmp_path / "c"))
    assert unchanged["summary"]["latency_mean_s"] < set_values["summary"]["latency_mean_s"]


def test_run_set_overrides_a_preset_figure_of_a_shipped_scenario(tmp_path, capsys):
    """The LTE preset's 5.85 Mbit/s uplink at 50 Mbit/s: AlexNet's 602 KB input leaves
    faster (bandwidth is set after presets are expanded, as in a sweep)."""
    base = ["-o", str(tmp_path / "a"), "--set", "workload[0].count=1"]
    slow = _json_run(capsys, str(ALEXNET), *base)
    fast = _json_run(
        capsys, str(ALEXNET), "-o", str(tmp_path / "b"), "--set", "workload[0].count=1",
        "--set", "links.uplink.bandwidth_mbps=50",
    )  # fmt: skip
    saved_s = slow["summary"]["latency_mean_s"] - fast["summary"]["latency_mean_s"]
    # 606,112 bytes sent: 8 * 606112 / 5.85e6 - 8 * 606112 / 50e6 = 0.7319 s saved
    assert saved_s == pytest.approx(8 * 606112 / 5.85e6 - 8 * 606112 / 50e6, rel=0.02)
    resolved = (tmp_path / "b" / "scenario.resolved.yaml").read_text()
    assert "bandwidth_mbps: 50" in resolved  # the run reproduces from its folder


def test_verbose_says_which_presets_were_loaded_and_each_placement(tmp_path, capsys):
    def args(folder: str) -> list[str]:
        return ["run", str(ALEXNET), "-o", str(tmp_path / folder), "--set", "workload[0].count=1"]

    assert main([*args("o"), "-v"]) == 0
    err = capsys.readouterr().err
    for preset in ("flagship_phone", "cloud_gpu", "lte"):
        assert f"/{preset}.yaml (included by {ALEXNET}): 1 preset(s)" in err
    assert "socsim: app camera (replica 0): policy offload -> cloud on cloud.gpu" in err
    assert "  preset " not in err  # -vv only
    assert main([*args("p"), "-vv"]) == 0
    assert "socsim:   preset nodes.flagship_phone from " in capsys.readouterr().err
    assert main(args("q")) == 0
    assert "loaded preset file" not in capsys.readouterr().err  # default: not shown


def test_quiet_drops_progress_but_socsim_warnings_stay(tmp_path, capsys, monkeypatch):
    scenario = write_scenario(tmp_path, tiny_document())
    made = []
    monkeypatch.setattr(cli, "stderr_progress", lambda s: made.append(s) or (lambda *a: None))

    def warn(scenario, result, path):
        warnings.warn(SocsimWarning("radio out of range"), stacklevel=1)

    monkeypatch.setattr(radio_range, "warn_run", warn)
    assert main(["run", str(scenario), "-o", str(tmp_path / "o"), "-q"]) == 0
    assert made == []  # no progress hook at all
    assert capsys.readouterr().err == "socsim: warning: radio out of range\n"
    assert main(["run", str(scenario), "-o", str(tmp_path / "p")]) == 0
    assert len(made) == 1


def test_levels_and_the_logger_is_restored_after_a_command(tmp_path):
    assert level_of(True, 0) == logging.ERROR
    assert [level_of(False, v) for v in (0, 1, 2, 5)] == [
        logging.WARNING, logging.INFO, logging.DEBUG, logging.DEBUG,
    ]  # fmt: skip
    logger = logging.getLogger("socsim")
    before = (logger.level, list(logger.handlers), logger.propagate)
    scenario = write_scenario(tmp_path, tiny_document())
    assert main(["validate", str(scenario), "-v"]) == 0
    assert (logger.level, list(logger.handlers), logger.propagate) == before


def test_sweep_json_is_one_object(tmp_path, capsys):
    scenario = write_scenario(tmp_path, tiny_document())
    out = tmp_path / "sw"
    status = main([
        "sweep", str(scenario), "--set", "links.uplink.bandwidth_mbps=1,10,100",
        "--executor", "serial", "-o", str(out), "--json",
    ])  # fmt: skip
    assert status == 0
    stdout = capsys.readouterr().out
    assert stdout.count("\n") == 1
    document = json.loads(stdout)
    assert document == {
        "scenario": "phone_cloud", "parameters": ["links.uplink.bandwidth_mbps"],
        "design": "grid", "points": 3, "replicates": 1, "mc_samples": None, "rows": 3,
        "failed": [], "output_dir": str(out),
    }  # fmt: skip


def test_run_json_with_samples_carries_the_intervals_and_quiet_drops_their_progress(
    tmp_path, capsys
):
    pixel3 = str(ROOT / "scenarios/examples/uncertain_pixel3.yaml")
    common = ["--samples", "3", "--executor", "serial"]
    err: list[str] = []
    document = _json_run(capsys, pixel3, "-o", str(tmp_path / "a"), *common, "-q", stderr=err)
    assert err == [""]
    written = (tmp_path / "a" / "intervals.csv").read_text().splitlines()
    assert len(document["intervals"]) == len(written) - 1 > 0  # one per row, header apart
    assert {row["samples"] for row in document["intervals"]} == {3}
    _json_run(capsys, pixel3, "-o", str(tmp_path / "b"), *common, stderr=err)
    assert "socsim run: 3 of 3 samples done" in err[1]  # their progress, without -q
