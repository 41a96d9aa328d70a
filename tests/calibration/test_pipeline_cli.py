"""``socsim calibrate all --quick`` and the measure/validate steps, with the real ONNX importer."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("onnxruntime")

from calibration.corpus import QUICK
from calibration.device import load_platform, read_calibration_comments
from calibration.report import REPORT_BEGIN, REPORT_END
from calibration.table import read_table
from simulator.cli import main
from simulator.exitcodes import EXIT_INVALID

FAST = ["--quick", "--runs", "5", "--warmup", "1", "--clock", "cpu"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("all")
    docs = root / "docs" / "calibration.md"
    docs.parent.mkdir()
    docs.write_text(f"# Calibration\n\nhand-written text\n\n{REPORT_BEGIN}\nold\n{REPORT_END}\n")
    device = root / "host_cpu.yaml"
    code = main(
        [
            "calibrate",
            "all",
            "-o",
            str(root / "run"),
            "--device",
            str(device),
            "--docs",
            str(docs),
            "--image",
            str(root / "docs" / "img" / "pv.png"),
            *FAST,
        ]
    )
    return code, root, docs, device


def test_all_writes_preset_report_and_figure(quick_run):
    code, root, docs, device = quick_run
    assert code == 0
    comments = read_calibration_comments(device)
    assert comments["fit_models"] == ", ".join(sorted(QUICK["fit"]))
    assert int(comments["ops_fitted"]) > 10
    assert comments["notes"].startswith("end-to-end clock: cpu; load average ")
    unit = load_platform(device).unit("host_cpu.cpu")
    assert unit.peak_flops["fp32"] == pytest.approx(
        float(comments["peak_gflops_measured"]) * 1e9, rel=1e-5
    )
    # the 2-thread preset, next to it, with the measured Amdahl fractions
    two = root / "host_cpu_2t.yaml"
    comments_2t = read_calibration_comments(two)
    assert comments_2t["node"] == "host_cpu_2t" and comments_2t["threads"] == "2"
    assert "conv=" in comments_2t["parallel_fractions_measured"]
    assert load_platform(two, "host_cpu_2t").unit("host_cpu_2t.cpu").cores == 2
    text = docs.read_text()
    assert "hand-written text" in text and "\nold\n" not in text
    (hold,) = QUICK["holdout"]
    assert text.count(REPORT_BEGIN) == 1 and text.count(f"| {hold} |") == 2  # 1 and 2 threads
    assert "Fit set" in text and "kernel sweeps" in text
    assert "](img/pv.png)" in text and (root / "docs" / "img" / "pv.png").stat().st_size > 1000
    table = pd.read_csv(root / "run" / "validation.csv")
    assert list(table["model"]) == [hold]
    kernels = pd.read_csv(root / "run" / "kernels_2t.csv")
    assert {hold, *QUICK["fit"]} == set(kernels["model"])
    assert "of the kernel time" in text and "| kind | kernels |" in text


def test_reference_rounds_and_boundary_rows(quick_run):
    """The reference model is timed once per round; the sweep's own kernels are marked
    in-network, its ReLU inputs and ReduceMax outputs boundary."""
    _, root, _, device = quick_run
    for suffix in ("", "_2t"):
        reference = pd.read_csv(root / "run" / f"reference{suffix}.csv")
        assert list(reference["round"]) == list(range(5))  # --runs 5: 5 rounds of 1
        assert (reference["median_s"] > 0).all()
    assert "; reference kernel " in read_calibration_comments(device)["notes"]
    fit = read_table(root / "run" / "fit.csv")
    sweep = fit[(fit["model"] == "sweep_pool_0") & (fit["level"] == "op")]
    marked = dict(zip(sweep["op_type"], sweep["boundary"], strict=False))
    assert marked["Relu"] == 1 and marked["ReduceMax"] == 1
    assert set(sweep.loc[~sweep["op_type"].isin(["Relu", "ReduceMax"]), "boundary"]) == {0}


def test_measure_and_validate_steps(quick_run, capsys):
    _, root, _, device = quick_run
    out = root / "steps"
    (name,) = QUICK["holdout"]
    assert (
        main(
            ["calibrate", "measure", "--corpus", "holdout", "--model", name, "-o", str(out), *FAST]
        )
        == 0
    )
    held = pd.read_csv(out / "holdout.csv", keep_default_na=False)
    assert set(held["level"]) == {"op", "model"}  # no microbenchmarks for a hold-out corpus
    assert (
        main(
            [
                "calibrate",
                "validate",
                str(out / "holdout.csv"),
                "--device",
                str(device),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "1 held-out models" in capsys.readouterr().out
    assert f"| {name} |" in (out / "validation.md").read_text()


def test_validate_refuses_a_fit_model(quick_run, capsys):
    _, root, _, device = quick_run
    assert (
        main(
            [
                "calibrate",
                "validate",
                str(root / "run" / "fit.csv"),
                "--device",
                str(device),
                "-o",
                str(root / "bad"),
            ]
        )
        == EXIT_INVALID
    )
    assert "were used to fit" in capsys.readouterr().err


def test_no_docs_writes_nothing_in_the_repository(monkeypatch, tmp_path):
    """--no-docs: preset and figure default into -o, the docs page is not touched."""
    import calibration.pipeline

    seen = {}
    monkeypatch.setattr(
        calibration.pipeline, "run_all", lambda *args, **kw: seen.update(args=args, kw=kw)
    )
    assert main(["calibrate", "all", "--no-docs", "-o", str(tmp_path), "--threads", "1"]) == 0
    out, device, docs, image = seen["args"][:4]
    assert out == tmp_path
    assert docs is None and device.parent == tmp_path and image.parent == tmp_path
    assert seen["kw"]["threads"] == (1,)
    assert main(["calibrate", "all", "-o", str(tmp_path)]) == 0
    assert str(seen["args"][1]) == "scenarios/devices/host_cpu.yaml"


def test_refit_measures_nothing_and_gives_the_same_presets(quick_run, monkeypatch, capsys):
    """--refit on the quick run's folder: no model runs, the same preset byte for byte
    (the fit is deterministic), the report says it was a refit."""
    import calibration.pipeline

    _, root, _, device = quick_run

    def no_measuring(*args, **kwargs):
        raise AssertionError("--refit measured")

    monkeypatch.setattr(calibration.pipeline, "measure_corpora", no_measuring)
    again = root / "again" / "host_cpu.yaml"
    again.parent.mkdir()
    page = root / "again" / "calibration.md"
    page.write_text(f"{REPORT_BEGIN}\n{REPORT_END}\n")
    args = ["calibrate", "all", "--refit", "-o", str(root / "run"), "--device", str(again)]
    args += ["--docs", str(page), "--image", str(root / "again" / "pv.png"), "--quick"]
    assert main(args) == 0
    assert again.read_bytes() == device.read_bytes()
    assert (root / "again" / "host_cpu_2t.yaml").read_bytes() == (
        root / "host_cpu_2t.yaml"
    ).read_bytes()
    assert "`socsim calibrate all --refit` re-fitted" in page.read_text()
    assert "no measuring" in capsys.readouterr().err


def test_refit_without_tables_is_a_clear_error(tmp_path, capsys):
    code = main(["calibrate", "all", "--refit", "--no-docs", "-o", str(tmp_path)])
    assert code == EXIT_INVALID
    err = capsys.readouterr().err
    assert "fit.csv does not exist" in err and "without --refit first" in err


def test_refit_of_tables_without_the_trimmed_mean_fits_their_median(quick_run, tmp_path):
    """Tables measured before mean_s existed (2026-12-07) refit with auto: the 1-thread
    preset is fitted with the median instead of stopping on the missing column."""
    import shutil

    _, root, _, _ = quick_run
    run = tmp_path / "run"
    shutil.copytree(root / "run", run)
    for name in ("fit.csv", "holdout.csv", "fit_2t.csv", "holdout_2t.csv"):
        table = pd.read_csv(run / name)
        table.drop(columns=[c for c in table.columns if c.startswith("mean_")]).to_csv(
            run / name, index=False
        )
    device = tmp_path / "host_cpu.yaml"
    args = ["calibrate", "all", "--refit", "--quick", "--no-docs", "-o", str(run)]
    assert main([*args, "--device", str(device)]) == 0
    assert read_calibration_comments(device)["statistic"] == "median"
    assert read_calibration_comments(tmp_path / "host_cpu_2t.yaml")["statistic"] == "median"
