"""The fit behind the published-device presets (``socsim calibrate published --fit``).

Per (device, unit) the free parameters are few and named in :data:`FREE`; everything
else in the preset is a datasheet figure or a stated assumption. The fit sees only the
rows whose role is ``fit`` (:func:`fit_rows` selects them, nothing else), minimises the sum of
squared log errors of socsim's prediction over them (Nelder-Mead on log parameters,
deterministic), and writes the values onto the preset lines marked ``# fit:UNIT.KEY``.

Parameters:

``scale``
    Every op kind's efficiency is ``scale x`` :data:`RATIOS` ``[unit kind][op kind]``
    (conv = 1). The ratios are assumptions (depthwise and memory-bound kinds reach a
    smaller share of peak than dense conv); only ``scale`` is fitted.
``dwconv``
    The depthwise ratio itself, where a unit has fit rows of several shapes.
``int8``
    The CPU's effective int8 rate per core (GOP/s): TFLite's int8 kernels of 2018-19 did
    not reach the ISA's SDOT bound, and efficiency is per op kind, not per dtype.
``dispatch_us``
    The per-op overhead, where fit rows of very different sizes separate it from the
    efficiency.

A unit with too few fit rows borrows ``dwconv`` and ``dispatch_us`` from another
device's fit (:data:`BORROW`). An efficiency above 1 is an error (the peak is wrong),
never clipped into the preset.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.published import DEVICES, DEVICES_DIR, load_device, model_graph
from simulator.errors import SocsimError

#: Efficiency of each op kind relative to conv, by unit kind (assumptions, see module doc).
RATIOS: Mapping[str, Mapping[str, float]] = {
    unit: {"conv": 1.0, "dwconv": dw, "fc": fc, "pool": 0.3, "elementwise": 0.3, "default": 0.3}
    for unit, dw, fc in (("cpu", 0.37, 1.0), ("gpu", 0.3, 0.3), ("dsp", 0.5, 0.3))
}
#: Free parameters per (device, unit).
FREE: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("Pixel 1", "cpu"): ("scale", "dwconv", "dispatch_us"),
    ("Pixel 2", "cpu"): ("scale", "dwconv", "dispatch_us", "int8"),
    ("Pixel 3", "cpu"): ("scale", "dwconv", "dispatch_us", "int8"),
    ("Pixel 3", "gpu"): ("scale", "dwconv", "dispatch_us"),
    ("Pixel 3", "dsp"): ("scale", "dwconv", "dispatch_us"),
    ("Pixel 4", "cpu"): ("scale", "int8"),
    ("Pixel 4", "gpu"): ("scale",),
    ("Pixel 4", "dsp"): ("scale",),
}
#: Units with too few fit rows to separate depthwise ratio and dispatch take them from the
#: same unit of another device, fitted on that device's fit rows (same TFLite release and
#: Android 10 in benchmarks.md; the IP one generation apart). The Pixel 4 DSP borrows
#: nothing: NNAPI there may run convs on the Hexagon 690's tensor accelerator, which the
#: Pixel 3 has not [R], and with the 685's per-op cost the one fit row cannot be met at
#: any efficiency <= 1; it keeps the preset's dispatch and the default ratios.
BORROW: Mapping[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("Pixel 4", "cpu"): ("Pixel 3", ("dwconv", "dispatch_us")),
    ("Pixel 4", "gpu"): ("Pixel 3", ("dwconv", "dispatch_us")),
}
_NUMBER = r"[-+0-9.eE]+"
#: ``key: VALUE  # fit:UNIT.KEY ...``, VALUE a number or ``{mean: M, sd: S}``
_MARKED = re.compile(
    rf"^(\s*)([a-z0-9_]+): ({_NUMBER}|\{{mean: {_NUMBER}, sd: {_NUMBER}\}})"
    r"(\s+# fit:([a-z0-9_]+)\.([a-z0-9_]+)\b.*)$"
)
_DISTRIBUTION = re.compile(rf"\{{mean: ({_NUMBER}), sd: ({_NUMBER})\}}")


def fit_rows(table: pd.DataFrame, device: str, unit: str) -> pd.DataFrame:
    """The fit rows of one (device, unit): the only rows the fit ever reads."""
    rows = table[(table["device"] == device) & (table["unit"] == unit) & (table["role"] == "fit")]
    if rows.empty:
        raise SocsimError(f"no fit rows for {device} {unit}")
    return rows


def unit_values(kind: str, params: Mapping[str, float], base_dispatch_us: float) -> dict:
    """Preset values (efficiencies, int8 GOP/s, dispatch µs) from the free parameters."""
    ratios = dict(RATIOS[kind])
    if "dwconv" in params:
        ratios["dwconv"] = params["dwconv"]
    values = {k: min(1.0, params["scale"] * r) for k, r in ratios.items()}
    if "int8" in params:
        values["int8"] = params["int8"]
    values["dispatch_us"] = params.get("dispatch_us", base_dispatch_us)
    return values


def _with_values(unit, values: Mapping[str, float]):
    efficiency = {k: v for k, v in values.items() if k in RATIOS[unit.kind]}
    peak = dict(unit.peak_flops)
    if "int8" in values:
        peak["int8"] = values["int8"] * 1e9
    return dataclasses.replace(
        unit, efficiency=efficiency, peak_flops=peak, dispatch_s=values["dispatch_us"] * 1e-6
    )


def _latency_s(graph, unit) -> float:
    # one request, every op on one unit: the ops run one after another, so the estimate
    # (and the engine) is the sum of op times (tests/calibration/test_published.py checks it)
    from simulator.hardware.cost import op_time_s

    return sum(op_time_s(op, unit) for op in graph)


def _start(free: Sequence[str], unit) -> dict[str, float]:
    start = {"scale": 0.3, "dwconv": RATIOS[unit.kind]["dwconv"], "dispatch_us": 5.0}
    if "int8" in free:
        start["int8"] = 2.0 * unit.peak_flops["fp32"] / 1e9
    return {k: start[k] for k in free}


def fit_unit(
    rows: pd.DataFrame, device: str, unit_name: str, given: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Fitted preset values of one (device, unit) from its fit rows.

    ``given`` fixes parameters that are not free here (``dwconv`` ratio, ``dispatch_us``).
    """
    from scipy.optimize import minimize

    platform, node = load_device(device)
    unit = platform.unit(f"{node}.{unit_name}")
    free = FREE[(device, unit_name)]
    graphs = [model_graph(r["zoo"], r["options"], r["dtype"]) for r in rows.to_dict("records")]
    published_s = rows["published_ms"].to_numpy(float) / 1e3
    start = _start(free, unit)
    base_dispatch_us = unit.dispatch_s * 1e6

    def loss(x: np.ndarray) -> float:
        params = {**(given or {}), **dict(zip(free, np.exp(x), strict=True))}
        candidate = _with_values(unit, unit_values(unit.kind, params, base_dispatch_us))
        predicted = np.array([_latency_s(g, candidate) for g in graphs])
        return float(np.sum(np.log(predicted / published_s) ** 2))

    x0 = np.log([start[k] for k in free])
    best = minimize(loss, x0, method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-10})
    params = {**(given or {}), **dict(zip(free, (float(v) for v in np.exp(best.x)), strict=True))}
    ratios = {**RATIOS[unit.kind], **({"dwconv": params["dwconv"]} if "dwconv" in params else {})}
    over = sorted(k for k, r in ratios.items() if params["scale"] * r > 1.0)
    if over:
        raise SocsimError(
            f"{device} {unit_name}: the fit wants efficiency > 1 for {over}: the preset's "
            "peak is too low for the published latencies"
        )
    return unit_values(unit.kind, params, base_dispatch_us)


def fit_all(table: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    """Fitted values of every (device, unit) in :data:`FREE` (lenders before borrowers)."""
    fitted: dict[tuple[str, str], dict[str, float]] = {}
    for key in sorted(FREE, key=lambda k: k in BORROW):
        given = None
        if key in BORROW:
            lender, names = BORROW[key]
            lent = fitted[(lender, key[1])]
            lent = {"dwconv": lent["dwconv"] / lent["conv"], "dispatch_us": lent["dispatch_us"]}
            given = {name: lent[name] for name in names}
        fitted[key] = fit_unit(fit_rows(table, *key), *key, given)
    return fitted


def shipped_values(devices_dir: Path = DEVICES_DIR) -> dict[tuple[str, str], dict[str, float]]:
    """The fitted quantities as the shipped presets hold them, per (device, unit)."""
    out = {}
    for device, unit_name in FREE:
        platform, node = load_device(device, devices_dir)
        unit = platform.unit(f"{node}.{unit_name}")
        values = {
            "conv": unit.efficiency_for("conv"),
            "dwconv": unit.efficiency_for("dwconv"),
            "dispatch_us": unit.dispatch_s * 1e6,
        }
        if "int8" in FREE[(device, unit_name)]:
            values["int8"] = unit.peak_flops["int8"] / 1e9
        out[(device, unit_name)] = values
    return out


def _g(value: float) -> str:
    return f"{value:.3g}"


def _written(old: str, value: float) -> str:
    """``value`` as the line writes it: a number, or a distribution whose mean it becomes,
    its sd scaled with it (the relative spread, docs/uncertainty.md, is kept)."""
    match = _DISTRIBUTION.fullmatch(old)
    if match is None:
        return _g(value)
    mean, sd = float(match.group(1)), float(match.group(2))
    return f"{{mean: {_g(value)}, sd: {_g(sd * value / mean)}}}"


def write_fitted(path: Path, unit_values_: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Rewrite the ``# fit:UNIT.KEY`` lines of a preset file; the keys written."""
    lines = Path(path).read_text().splitlines(keepends=True)
    written = []
    for i, line in enumerate(lines):
        match = _MARKED.match(line.rstrip("\n"))
        if not match:
            continue
        indent, key, old, comment, unit, marker_key = match.groups()
        if marker_key != key:
            raise SocsimError(f"{path}:{i + 1}: marker fit:{unit}.{marker_key} on key '{key}'")
        value = unit_values_.get(unit, {}).get(key)
        if value is None:
            raise SocsimError(f"{path}:{i + 1}: no fitted value for {unit}.{key}")
        text = f"{indent}{key}: {_written(old, value)}"
        # keep the comment column where it was
        pad = max(1, len(f"{indent}{key}: {match.group(3)}") - len(text) + 1)
        lines[i] = text + " " * (pad - 1) + comment + "\n"
        written.append(f"{unit}.{key}")
    Path(path).write_text("".join(lines))
    return written


def fit_and_write(
    table: pd.DataFrame, devices_dir: Path = DEVICES_DIR
) -> dict[tuple[str, str], dict[str, float]]:
    """Fit every (device, unit) and write the values into the preset files."""
    fitted = fit_all(table)
    for device, (file_name, _) in DEVICES.items():
        per_unit = {u: v for (d, u), v in fitted.items() if d == device}
        if per_unit:
            write_fitted(devices_dir / file_name, per_unit)
    return fitted


def describe(fitted: Mapping[tuple[str, str], Mapping[str, float]]) -> str:
    """One line per (device, unit): the fitted parameters."""
    out = []
    for (device, unit), values in fitted.items():
        keys = ("conv", "dwconv", "int8", "dispatch_us")
        shown = ", ".join(f"{k}={_g(v)}" for k, v in values.items() if k in keys)
        out.append(f"{device} {unit}: {shown}")
    return "\n".join(out)


__all__ = [
    "FREE",
    "RATIOS",
    "describe",
    "fit_all",
    "fit_and_write",
    "fit_rows",
    "shipped_values",
    "write_fitted",
]
