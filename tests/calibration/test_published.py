"""The published-figures table, the phone presets fitted to it, ``calibrate published``."""

from __future__ import annotations

import pandas as pd
import pytest

from calibration.published import (
    CONFIG,
    DATA,
    DEVICES,
    OUTPUT_COLUMNS,
    check_disjoint,
    compare,
    load_device,
    load_table,
    model_graph,
    parse_options,
)
from simulator.errors import SocsimError


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return load_table()


@pytest.fixture(scope="module")
def result(table) -> pd.DataFrame:
    return compare(table)


def test_table_parses_and_every_row_has_a_source(table):
    assert len(table) >= 100
    assert table["source"].str.contains(r"@[0-9a-f]{40}").all()
    assert set(table["role"]) == {"fit", "holdout", "excluded"}
    assert set(table["device"]) <= set(DEVICES)


def test_a_published_figure_as_read(table):
    # benchmarks.md, Android table: Mobilenet_1.0_224(float), Pixel 3, CPU 4 threads = 23.9 ms
    row = table[
        (table["device"] == "Pixel 3")
        & (table["model"] == "Mobilenet_1.0_224(float)")
        & (table["unit"] == "cpu")
    ]
    assert row["published_ms"].tolist() == [23.9]
    assert row["threads"].tolist() == [4]


def test_fit_and_holdout_configurations_are_disjoint(table):
    used = table[table["role"] != "excluded"]
    fit = set(map(tuple, used[used["role"] == "fit"][list(CONFIG)].astype(str).values))
    hold = set(map(tuple, used[used["role"] == "holdout"][list(CONFIG)].astype(str).values))
    assert fit and hold and not fit & hold


def test_a_configuration_in_both_roles_is_refused(table):
    bad = table.copy()
    first_fit = bad.index[bad["role"] == "fit"][0]
    twin = bad.loc[[first_fit]].assign(role="holdout")
    with pytest.raises(SocsimError, match="both fit and hold-out"):
        check_disjoint(pd.concat([bad, twin]))


def test_options_parse():
    assert parse_options("width_multiplier=0.5;resolution=160") == {
        "width_multiplier": 0.5,
        "resolution": 160,
    }
    assert parse_options("") == {}
    with pytest.raises(SocsimError):
        parse_options("resolution")


def test_output_columns_and_error_definition(result):
    assert list(result.columns) == list(OUTPUT_COLUMNS)
    expected = (result["predicted_ms"] - result["published_ms"]) / result["published_ms"]
    assert (result["error"] - expected).abs().max() < 1e-12
    assert set(result["role"]) == {"fit", "holdout"}


def test_hand_checked_row_is_the_sum_of_op_times(result):
    # one request on one unit: the estimate is the sum of the op times (no overlap, no
    # transfers); checked here op by op for the Pixel 3 GPU row
    from simulator.hardware.cost import op_time_s

    platform, node = load_device("Pixel 3")
    gpu = platform.unit(f"{node}.gpu")
    graph = model_graph("mobilenet_v1", "", "fp16")
    total_ms = sum(op_time_s(op, gpu) for op in graph) * 1e3
    row = result[(result["device"] == "Pixel 3") & (result["unit"] == "gpu")]
    assert row["predicted_ms"].iloc[0] == pytest.approx(total_ms, rel=1e-12)
    # conv1 + 13 depthwise + 13 pointwise convs, each with its BatchNorm and ReLU fused,
    # then avgpool, fc, softmax
    assert len(graph) == 27 + 3


def test_one_op_by_hand():
    # Pixel 3 GPU, the fc of MobileNet V1 (fp16, 1024 -> 1000 with bias, no caches):
    # t = dispatch + max(flops / (peak x eff[fc]), bytes / bandwidth)
    from simulator.hardware.cost import op_time_s

    platform, node = load_device("Pixel 3")
    gpu = platform.unit(f"{node}.gpu")
    fc = model_graph("mobilenet_v1", "", "fp16").op("fc")
    flops = 2 * 1024 * 1000  # a multiply-add is 2 FLOPs; the bias add is not counted
    nbytes = 2 * (1024 + 1000 + 1024 * 1000 + 1000)  # fp16 input, output, weights, bias
    assert fc.flops == flops
    compute = flops / (1454e9 * gpu.efficiency_for("fc"))
    memory = nbytes / 25.4e9
    expected = gpu.dispatch_s + max(compute, memory)
    assert op_time_s(fc, gpu) == pytest.approx(expected, rel=1e-9)


def test_docs_block_is_the_commands_output(table, result):
    from pathlib import Path

    from calibration.published_fit import shipped_values
    from calibration.published_report import block, splice

    page = Path(__file__).resolve().parents[2] / "docs" / "presets.md"
    text = page.read_text(encoding="utf-8")
    image = "img/published_pred_vs_published.png"
    fresh = splice(text, block(result, table, shipped_values(), image))
    assert fresh == text, "run: socsim calibrate published --docs docs/presets.md"


def test_splice_needs_the_markers():
    from calibration.published_report import splice

    with pytest.raises(SocsimError, match="markers"):
        splice("no block here", "x")


def test_targets_of_the_issue_hold(result):
    fit = result[result["role"] == "fit"]["error"].abs()
    hold = result[result["role"] == "holdout"]["error"].abs()
    assert fit.median() <= 0.10
    assert (hold <= 0.25).mean() >= 0.80


def test_shipped_presets_are_the_fit(table):
    # the '# fit:' lines hold what the fit writes (3 significant digits)
    from calibration.published_fit import FREE, fit_rows, fit_unit

    for device, unit in (("Pixel 3", "gpu"), ("Pixel 4", "dsp")):
        fitted = fit_unit(fit_rows(table, device, unit), device, unit)
        platform, node = load_device(device)
        shipped = platform.unit(f"{node}.{unit}")
        assert (device, unit) in FREE
        assert shipped.efficiency["conv"] == pytest.approx(fitted["conv"], rel=5e-3)


def test_fit_rows_never_include_holdout(table):
    from calibration.published_fit import FREE, fit_rows

    for device, unit in FREE:
        assert (fit_rows(table, device, unit)["role"] == "fit").all()


def test_cli_writes_the_table(tmp_path):
    from simulator.cli import main

    code = main(["calibrate", "published", "-o", str(tmp_path)])
    assert code == 0
    out = pd.read_csv(tmp_path / "published.csv")
    assert list(out.columns) == list(OUTPUT_COLUMNS)
    assert (tmp_path / "published.png").stat().st_size > 0
    assert (out["predicted_ms"] > 0).all() and len(out) == len(out.dropna(subset=["error"]))


def test_data_file_is_where_the_docs_say():
    assert DATA.name == "published.csv" and DATA.parent.name == "data"
