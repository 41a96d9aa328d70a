"""The Pixel 3 preset's distributions come from its published-figure residuals, and a
refit keeps them (calibration.published_fit.write_fitted)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from calibration.published import DEVICES_DIR, compare, load_table, residual_spread
from calibration.published_fit import write_fitted
from simulator.spec.yamlio import load_yaml_file

#: (unit, dtype) of the Pixel 3 preset whose peak is a distribution
SPREAD = (("cpu", "fp32"), ("cpu", "int8"), ("gpu", "fp16"), ("dsp", "int8"))


def test_residual_spread_by_hand():
    result = pd.DataFrame(
        {
            "device": ["D"] * 3,
            "unit": ["cpu"] * 3,
            "dtype": ["fp32"] * 3,
            "published_ms": [10.0, 10.0, 99.0],
            "predicted_ms": [10.0 * math.e**-0.1, 10.0 * math.e**0.1, 1.0],
            "role": ["holdout", "holdout", "fit"],  # the fit row is left out
        }
    )
    row = residual_spread(result).iloc[0]
    assert row["rows"] == 2 and row["bias"] == pytest.approx(0.0, abs=1e-12)
    assert row["rms"] == pytest.approx(0.1)


def test_pixel3_peaks_spread_by_their_holdout_residuals():
    spread = residual_spread(compare(load_table()))
    spread = spread[spread["device"] == "Pixel 3"].set_index(["unit", "dtype"])
    units = load_yaml_file(DEVICES_DIR / "pixel3_sd845.yaml")["presets"]["nodes"]["pixel3"]["units"]
    for unit, dtype in SPREAD:
        written = units[unit]["peak_gflops"][dtype]
        rms = spread.loc[(unit, dtype), "rms"]
        assert written["sd"] == float(f"{written['mean'] * rms:.3g}"), (unit, dtype)
    assert set(spread.index) == set(SPREAD)  # every unit and dtype with hold-out rows


def test_a_refit_moves_the_mean_and_keeps_the_relative_spread(tmp_path):
    path = tmp_path / "preset.yaml"
    path.write_text(
        "          int8: {mean: 79, sd: 7.2}    # fit:cpu.int8 (sd: residuals)\n"
        "          conv: 0.453                  # fit:cpu.conv\n"
    )
    assert write_fitted(path, {"cpu": {"int8": 80.0, "conv": 0.5}}) == ["cpu.int8", "cpu.conv"]
    lines = path.read_text().splitlines()
    assert lines[0] == "          int8: {mean: 80, sd: 7.29}    # fit:cpu.int8 (sd: residuals)"
    assert lines[1].startswith("          conv: 0.5 ")
    assert np.isclose(7.29 / 80, 7.2 / 79, rtol=1e-3)
