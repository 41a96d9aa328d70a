"""The calibration steps as functions of paths, and the one-command regeneration.

``run_all`` = build both corpora, microbenchmark the host, measure the fit and hold-out
models, fit, write the device preset, validate on the hold-out set and write the report
(into ``docs/calibration.md`` between the report markers, with its figure).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from calibration.corpus import FIT, HOLDOUT, QUICK, assert_disjoint, build_corpus
from calibration.device import (
    NODE,
    cache_comment,
    host_cache_sizes,
    read_calibration_comments,
    write_device,
)
from calibration.fit import FitResult, HostRates, fit, without_profiler
from calibration.layout import Layout
from calibration.measure import GraphLoader, host_name, measure_models, onnx_graph, provenance
from calibration.microbench import host_rates, run_suite, suite
from calibration.ortrun import RunSettings
from calibration.predictor_file import predictor_path, train_predictor_file
from calibration.reference import Reference, contended, speedup, spread
from calibration.report import (
    ThreadResult,
    plot,
    report_markdown,
    single_markdown,
    splice_report,
)
from calibration.statistic import resolve_statistic
from calibration.table import (
    Provenance,
    half_repeatability,
    make_table,
    read_provenance,
    read_table,
    write_table,
)
from calibration.threads import parallel_fractions
from calibration.validate import check_held_out, graphs_for, kernel_table, validation_table
from simulator.errors import SocsimError
from simulator.graph.model import ModelGraph

OPTIMIZED_SUFFIX = ".ort_extended.onnx"
#: The thread counts ``calibrate all`` measures and fits (one preset each).
THREADS = (1, 2)


class CachedLoader:
    """A :data:`GraphLoader` that imports each (file, fuse, size, mtime) once per run.

    ``calibrate all`` costs every model's optimised graph after measuring, then predicts
    it again for validation: the big networks' files (hundreds of MB) are parsed once.
    """

    def __init__(self, loader: GraphLoader = onnx_graph):
        self.loader = loader
        self.graphs: dict[tuple, ModelGraph] = {}

    def __call__(self, path: Path, fuse: str) -> ModelGraph:
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), fuse, stat.st_size, stat.st_mtime_ns)
        if key not in self.graphs:
            self.graphs[key] = self.loader(path, fuse)
        return self.graphs[key]


def device_for(device: Path, threads: int) -> Path:
    """The preset file of ``threads`` threads: ``device`` itself for 1, else ``<stem>_<n>t``."""
    return device if threads == 1 else device.with_name(f"{device.stem}_{threads}t{device.suffix}")


def node_for(threads: int) -> str:
    return NODE if threads == 1 else f"{NODE}_{threads}t"


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
        corpus: build_corpus(corpus, layout.models, names, lambda m: log(f"building {m}"))
        for corpus, names in selection.items()
    }
    micro_rows = []
    if micro:
        log("microbenchmarks")
        micro_rows = run_suite(suite(quick), settings, layout.work / "micro")
    # the load average says how far other processes could disturb these timings
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    every = {name: path for group in paths.values() for name, path in group.items()}
    log(f"measuring {len(every)} models at {settings.threads} thread(s)")
    reference = Reference(layout.work / "reference.onnx", settings)
    rows = measure_models(every, settings, layout.work, loader, log, reference)
    steady = spread(reference.table())
    reference.table().to_csv(layout.reference_csv, index=False, float_format="%.9g")
    notes = (
        f"end-to-end clock: {settings.clock}; load average {load:.1f} when measuring began; "
        f"reference kernel {steady['median_s'] * 1e3:.3f} ms, its round medians spread "
        f"{steady['spread_pct']:.1f} %; kernel times: the profiler's whole µs as grouped data"
    )
    home = "fit" if "fit" in paths else next(iter(paths))
    tables = {}
    for corpus, group in paths.items():
        mine = [r for r in rows if r["model"] in group]
        table = make_table((micro_rows if corpus == home else []) + mine)
        target = layout.fit_csv if corpus == "fit" else layout.holdout_csv
        write_table(table, target, provenance(settings.threads, notes))
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


def warning_summary(caught: Sequence[warnings.WarningMessage]) -> str:
    """One progress line for the warnings of a validation: their count, then per
    category (most frequent first) its count, distinct messages and one of them, so a
    frequent expected warning (the calibrated preset's 0 W) does not hide the others
    (e.g. a predictor extrapolating)."""
    by_category: dict[str, list[str]] = {}
    for w in caught:
        by_category.setdefault(w.category.__name__, []).append(str(w.message))
    parts = [
        f"{len(messages)} {name} ({len(set(messages))} distinct; e.g. {messages[0]})"
        for name, messages in sorted(by_category.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    return f"{len(caught)} warning(s) while predicting: " + "; ".join(parts)


def fit_file(
    measurements: Path,
    device: Path,
    rates: HostRates | None = None,
    node: str = NODE,
    extra: Mapping[str, str] | None = None,
    learned: bool = True,
    min_rows: int = 20,
    statistic: str = "auto",
) -> tuple[FitResult, Provenance]:
    """Fit a measurement CSV and write the device preset; (result, provenance).

    The roofline always; with ``learned`` also the learned kernel predictor
    (:func:`train_predictor_file`; a kind needs ``min_rows`` kernels), written next to
    the preset and named by its unit. ``statistic`` is the time each row stands for
    (:data:`calibration.statistic.STATISTICS`; ``auto``: by the table's threads,
    :func:`calibration.statistic.resolve_statistic`, or the median for a table without that
    statistic's column, such as one ``import-csv`` wrote), recorded in the preset.
    """
    prov = read_provenance(measurements)
    if statistic == "auto":
        plain = read_table(measurements)
        threads = prov.threads if prov else int(plain["threads"].max())
        statistic = resolve_statistic(statistic, threads, plain.columns)
    table = read_table(measurements, statistic)
    prov = prov or Provenance(
        "unknown", "unknown (no provenance file)", "unknown", int(table["threads"].max())
    )
    rates = rates or rates_from(table, prov.threads)
    result = fit(table, rates)
    fitted = sorted(set(table.loc[table["level"] == "op", "model"]))
    learned_model = (
        train_predictor_file(
            # predict the kernels of an unprofiled run
            without_profiler(table, result.profiler_s, result.runtime_scale),
            result,
            prov,
            predictor_path(device),
            min_rows,
        )
        if learned
        else None
    )
    notes = {"node": node, "statistic": statistic, **(extra or {})}
    if learned_model:
        notes["predictor"] = f"{learned_model[0].name} (kinds: {learned_model[1]})"
    notes.update({"fit_models": ", ".join(fitted), "measurements": measurements.name})
    if prov.host.startswith(host_name()):
        # measured here: keep this machine's cache sizes for a hierarchy-aware fit
        notes["host_caches"] = cache_comment(host_cache_sizes()) or "unknown"
    write_device(
        device, result, prov, notes, node, learned_model[0].name if learned_model else None
    )
    return result, prov


def _graphs(table: pd.DataFrame, layout: Layout, loader: GraphLoader, corpus: str):
    """(original + optimized graphs per measured model, optimized graph per model)."""
    names = sorted(set(table.loc[table["level"] == "model", "model"]))
    originals = {n: layout.models / f"{n}.onnx" for n in names}
    missing = [n for n, p in originals.items() if not p.exists()]
    if missing:
        known = {r.name for r in (HOLDOUT if corpus == "holdout" else FIT)}
        rebuild = tuple(n for n in missing if n in known)
        if len(rebuild) != len(missing):
            raise SocsimError(f"validate: no ONNX file for {missing} in {layout.models}")
        build_corpus(corpus, layout.models, rebuild)
    optimized = {n: layout.work / f"{n}{OPTIMIZED_SUFFIX}" for n in names}
    graphs = graphs_for(names, originals, optimized, loader)
    return graphs, {n: g["optimized"] for n, g in graphs.items() if "optimized" in g}


def validate_files(
    measured_csv: Path,
    device: Path,
    layout: Layout,
    loader: GraphLoader = onnx_graph,
    held_out: bool = True,
    statistic: str = "median",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """End-to-end and kernel-level errors of the measured models; (models, kernels)."""
    table = read_table(measured_csv, statistic)
    names = sorted(set(table.loc[table["level"] == "model", "model"]))
    if held_out:
        check_held_out(names, device)
    graphs, optimized = _graphs(table, layout, loader, "holdout" if held_out else "fit")
    result = validation_table(table, device, graphs, held_out)
    kernels = kernel_table(table, device, optimized)
    return result, kernels


def validate_single(
    holdout_csv: Path,
    device: Path,
    layout: Layout,
    loader: GraphLoader = onnx_graph,
    statistic: str | None = None,
) -> tuple[pd.DataFrame, str]:
    """``calibrate validate``: tables and figure into ``layout.out``; (table, markdown).

    ``statistic``: default, the one the preset was fitted with."""
    statistic = statistic or read_calibration_comments(device).get("statistic", "median")
    result, kernels = validate_files(holdout_csv, device, layout, loader, statistic=statistic)
    result.to_csv(layout.validation_csv, index=False, float_format="%.9g")
    kernels.to_csv(layout.kernels_csv, index=False, float_format="%.9g")
    image = plot({"held-out models": result}, layout.out / "pred_vs_measured.png", device.name)
    return result, single_markdown(result, kernels, image.name)


def run_all(
    out: Path,
    device: Path,
    docs: Path | None,
    image: Path,
    settings: RunSettings,
    quick: bool = False,
    log: Callable[[str], None] = print,
    threads: tuple[int, ...] = THREADS,
    statistic: str = "auto",
    refit: bool = False,
) -> dict[str, float]:
    """The whole pipeline at every thread count; the 1-thread headline and the seconds.

    ``refit``: measure nothing; fit, validate and report from the tables an earlier run
    left in ``out`` (after a change to the fitting code, or to re-read a run). A missing
    table is a :class:`~simulator.errors.SocsimError` naming it.

    ``statistic``: each row's time for fitting and validating (the median of its runs,
    their lower quartile ``q1`` or their trimmed ``mean``; ``auto``: the mean at 1
    thread, the median above, :func:`calibration.statistic.resolve_statistic`).

    Per thread count ``n``: measure the fit and hold-out corpora with ``n`` intra-op
    threads, fit the preset (``device``, ``device_for(device, n)`` for ``n`` > 1),
    predict every hold-out and fit model end to end and kernel by kernel.
    """
    start = time.perf_counter()
    assert_disjoint(FIT, HOLDOUT)
    selection = dict(QUICK) if quick else {"fit": (), "holdout": ()}
    loader = CachedLoader()
    results: list[ThreadResult] = []
    for n in threads:
        layout = Layout(out, n)
        run = dataclasses.replace(settings, threads=n, clock=settings.clock if n == 1 else "wall")

        def stage(text: str, n: int = n) -> None:
            log(f"[{time.perf_counter() - start:6.1f} s] {n} thread(s): {text}")

        if refit:
            layout.require_tables()
            stage(f"refitting from {layout.fit_csv} and {layout.holdout_csv} (no measuring)")
        else:
            measure_corpora(
                selection, layout, run, micro=True, quick=quick, log=stage, loader=loader
            )
        target, node = device_for(device, n), node_for(n)
        extra = {}
        measured = read_table(layout.fit_csv)
        # a refit of tables measured before mean_s existed falls back to the median
        stat = resolve_statistic(statistic, n, measured.columns)
        halves = half_repeatability(measured)
        if halves:  # tables measured before the half columns existed have none
            shares = ", ".join(f"{s} {share:.0%}" for s, share in halves.items())
            stage(
                f"the run's two halves measured the fit kernels within ±10 % of each "
                f"other: {shares} (fitted with: {stat})"
            )
            extra["half_repeatability"] = ", ".join(
                f"{s}={share:.3f}" for s, share in halves.items()
            )
        if n > 1 and 1 in threads:
            fractions = parallel_fractions(
                read_table(Layout(out, 1).fit_csv, stat),
                read_table(layout.fit_csv, stat),
                n,
            )
            extra["parallel_fractions_measured"] = ", ".join(
                f"{kind}={p:.3f}" for kind, p in fractions.items()
            )
            gain = _reference_speedup(Layout(out, 1), layout)
            if not math.isnan(gain):  # NaN: measured before the reference model existed
                extra["reference_speedup"] = f"{gain:.2f}"
                if contended(gain, n):
                    stage(
                        f"warning: the reference model ran {gain:.2f}x as fast at {n} "
                        "threads as at 1 (about 1.6x on two free cores): the extra "
                        "threads found the cores busy (another process, or the "
                        f"hypervisor); the {n}-thread figures of this run describe a "
                        "contended host"
                    )
        # --quick has a handful of kernels per kind: let the predictor train on them
        result, _ = fit_file(
            layout.fit_csv,
            target,
            node=node,
            extra=extra,
            min_rows=5 if quick else 20,
            statistic=stat,
        )
        stage(
            f"fit {result.op_stats['n']} kernels, op MAPE {result.op_stats['mape']:.1f} %"
            f" -> {target}"
        )
        stage("validating")
        with warnings.catch_warnings(record=True) as caught:
            # the predictor warns when an op lies outside its training range: count
            # them here rather than print one per (kind, feature) into the progress
            warnings.simplefilter("always")
            holdout, hold_kernels = validate_files(
                layout.holdout_csv, target, layout, loader, statistic=stat
            )
            fitted, fit_kernels = validate_files(
                layout.fit_csv, target, layout, loader, held_out=False, statistic=stat
            )
        if caught:
            stage(warning_summary(caught))
        holdout.to_csv(layout.validation_csv, index=False, float_format="%.9g")
        pd.concat([hold_kernels, fit_kernels]).to_csv(
            layout.kernels_csv, index=False, float_format="%.9g"
        )
        results.append(
            ThreadResult(
                n,
                target.name,
                read_calibration_comments(target),
                holdout,
                hold_kernels,
                fitted,
                fit_kernels,
            )
        )
        head = results[-1].headline()
        stage(
            f"hold-out: end to end MAPE {head['mape']:.1f} %, within ±10 % "
            f"{head['within_10'] * 100:.0f} %; kernels within ±10 % "
            f"{head['kernel_within_10'] * 100:.0f} %"
        )
    seconds = time.perf_counter() - start
    plot(
        {f"{r.threads} thread(s)": r.holdout for r in results},
        image,
        "Held-out real architectures on host_cpu (bars: IQR)",
    )
    if docs is not None:
        image_ref = _relative(image, docs.parent)
        splice_report(docs, report_markdown(results, image_ref, seconds, refit=refit))
    figures = results[0].headline()
    figures["seconds"] = seconds
    log(f"calibrate all: done in {seconds:.0f} s")
    return figures


def _reference_speedup(one: Layout, many: Layout) -> float:
    """The reference model's speedup of run ``many`` over the 1-thread run ``one``
    (:func:`calibration.reference.speedup`); NaN when either table is missing."""
    if not (one.reference_csv.exists() and many.reference_csv.exists()):
        return float("nan")
    return speedup(pd.read_csv(one.reference_csv), pd.read_csv(many.reference_csv))


def _relative(path: Path, base: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(base).resolve())
