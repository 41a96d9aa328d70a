"""The calibration steps as functions of paths, and the one-command regeneration.

``run_all`` = build both corpora, microbenchmark the host, measure the fit and hold-out
models, fit, write the device preset, validate on the hold-out set and write the report
(into ``docs/calibration.md`` between the report markers, with its figure).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from calibration.corpus import FIT, HOLDOUT, assert_disjoint, build_corpus
from calibration.device import read_calibration_comments, write_device
from calibration.fit import FitResult, HostRates, fit
from calibration.measure import GraphLoader, measure_models, onnx_graph, provenance
from calibration.microbench import host_rates, run_suite, suite
from calibration.ortrun import RunSettings
from calibration.table import Provenance, make_table, read_provenance, read_table, write_table
from calibration.validate import (
    check_held_out,
    graphs_for,
    plot,
    report_markdown,
    summary,
    validation_table,
)
from simulator.errors import SocsimError

REPORT_BEGIN = "<!-- calibration-report:begin (written by `socsim calibrate all`) -->"
REPORT_END = "<!-- calibration-report:end -->"
OPTIMIZED_SUFFIX = ".ort_extended.onnx"


@dataclass(frozen=True)
class Layout:
    """Where a calibration run keeps its files (under ``out``)."""

    out: Path

    @property
    def models(self) -> Path:
        return self.out / "models"

    @property
    def work(self) -> Path:
        return self.out / "work"

    @property
    def fit_csv(self) -> Path:
        return self.out / "fit.csv"

    @property
    def holdout_csv(self) -> Path:
        return self.out / "holdout.csv"

    @property
    def validation_csv(self) -> Path:
        return self.out / "validation.csv"


def measure_corpora(
    selection: Mapping[str, tuple[str, ...]],
    layout: Layout,
    settings: RunSettings,
    micro: bool,
    quick: bool = False,
    log: Callable[[str], None] = print,
    loader: GraphLoader = onnx_graph,
) -> dict[str, pd.DataFrame]:
    """Measure corpora (``corpus -> model names``, empty = all) interleaved, one CSV each.

    Microbenchmark rows (with ``micro``) go with the ``fit`` corpus, else with the first.
    """
    paths = {
        corpus: build_corpus(corpus, layout.models, names) for corpus, names in selection.items()
    }
    micro_rows = []
    if micro:
        log("microbenchmarks ...")
        micro_rows = run_suite(suite(quick), settings, layout.work / "micro")
    every = {name: path for group in paths.values() for name, path in group.items()}
    log(f"measuring {len(every)} models in {settings.rounds} interleaved rounds ...")
    rows = measure_models(every, settings, layout.work, loader)
    home = "fit" if "fit" in paths else next(iter(paths))
    tables = {}
    for corpus, group in paths.items():
        mine = [r for r in rows if r["model"] in group]
        table = make_table((micro_rows if corpus == home else []) + mine)
        target = layout.fit_csv if corpus == "fit" else layout.holdout_csv
        write_table(
            table, target, provenance(settings.threads, f"end-to-end clock: {settings.clock}")
        )
        tables[corpus] = table
    return tables


def rates_from(table: pd.DataFrame, threads: int) -> HostRates:
    """Host rates: the best FLOP/s (microbenchmarks or fp32 ops) and streaming rate."""
    micro = table[table["level"] == "micro"].to_dict("records")
    if not micro:
        raise SocsimError(
            "fit: the measurements have no microbenchmark rows; give --peak-gflops and "
            "--bandwidth-gb-s (e.g. for a phone's imported profile)"
        )
    peak, bandwidth = host_rates(micro)
    # a profiled op can beat every microbenchmark (a better-tuned shape): the peak is the
    # best rate observed anywhere, so fitted efficiencies stay <= 1 without hitting it
    ops = table[(table["level"] == "op") & (table["dtype"] == "fp32")]
    if len(ops):
        peak = max(peak, float((ops["flops"] / ops["median_s"]).max()))
    return HostRates({"fp32": peak}, bandwidth, threads)


def fit_file(
    measurements: Path, device: Path, rates: HostRates | None = None
) -> tuple[FitResult, Provenance]:
    """Fit a measurement CSV and write the device preset; (result, provenance)."""
    table = read_table(measurements)
    prov = read_provenance(measurements) or Provenance(
        "unknown", "unknown (no provenance file)", "unknown", int(table["threads"].max())
    )
    rates = rates or rates_from(table, prov.threads)
    result = fit(table, rates)
    fitted = sorted(set(table.loc[table["level"] == "op", "model"]))
    write_device(
        device, result, prov, {"fit_models": ", ".join(fitted), "measurements": measurements.name}
    )
    return result, prov


def validate_files(
    holdout_csv: Path,
    device: Path,
    layout: Layout,
    image: Path,
    image_ref: str | None = None,
    loader: GraphLoader = onnx_graph,
) -> tuple[pd.DataFrame, str]:
    """Validate the hold-out measurements against the device; (table, markdown).

    ``image_ref`` is how the markdown links the figure (default: ``image`` as given).
    """
    table = read_table(holdout_csv)
    names = sorted(set(table.loc[table["level"] == "model", "model"]))
    check_held_out(names, device)
    originals = {n: layout.models / f"{n}.onnx" for n in names}
    missing = [n for n, p in originals.items() if not p.exists()]
    if missing:
        known = {r.name for r in HOLDOUT}
        rebuild = tuple(n for n in missing if n in known)
        if len(rebuild) != len(missing):
            raise SocsimError(f"validate: no ONNX file for {missing} in {layout.models}")
        build_corpus("holdout", layout.models, rebuild)
    optimized = {n: layout.work / f"{n}{OPTIMIZED_SUFFIX}" for n in names}
    graphs = graphs_for(names, originals, optimized, loader)
    result = validation_table(table, device, graphs)
    result.to_csv(layout.validation_csv, index=False, float_format="%.9g")
    variants = tuple(v for v in ("original", "optimized") if f"error_pct_{v}" in result)
    plot(result, image, variants)
    prov = read_calibration_comments(device)
    return result, report_markdown(result, prov, image_ref or str(image), variants)


def splice_report(docs: Path, report: str) -> None:
    """Replace the text between the report markers of ``docs`` (append them if absent)."""
    text = docs.read_text() if docs.exists() else "# Calibration\n"
    block = f"{REPORT_BEGIN}\n{report}\n{REPORT_END}"
    pattern = re.compile(re.escape(REPORT_BEGIN) + r".*?" + re.escape(REPORT_END), re.S)
    text = (
        pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block + "\n"
    )
    docs.write_text(text)


def run_all(
    out: Path,
    device: Path,
    docs: Path | None,
    image: Path,
    settings: RunSettings,
    quick: bool = False,
    log: Callable[[str], None] = print,
) -> dict[str, float]:
    """The whole pipeline; returns the headline figures (and the wall time it took)."""
    start = time.perf_counter()
    assert_disjoint(FIT, HOLDOUT)
    layout = Layout(out)
    fit_names = tuple(r.name for r in FIT[:2]) if quick else ()
    hold_names = tuple(r.name for r in HOLDOUT[:1]) if quick else ()
    selection = {"fit": fit_names, "holdout": hold_names}
    measure_corpora(selection, layout, settings, micro=True, quick=quick, log=log)
    result, _ = fit_file(layout.fit_csv, device)
    log(f"fit: {result.op_stats['n']} ops, op MAPE {result.op_stats['mape']:.1f} % -> {device}")
    image_ref = _relative(image, docs.parent) if docs is not None else None
    table, report = validate_files(layout.holdout_csv, device, layout, image, image_ref)
    if docs is not None:
        splice_report(docs, report)
    figures = summary(table)
    figures["seconds"] = time.perf_counter() - start
    log(
        f"validate: {figures['n']} held-out models, MAPE {figures['mape']:.1f} %, "
        f"within ±10 %: {figures['within_10'] * 100:.0f} % ({figures['seconds']:.0f} s)"
    )
    return figures


def _relative(path: Path, base: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(base).resolve())
