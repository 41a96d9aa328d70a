"""``socsim calibrate measure|fit|validate|import-csv|compare|published|all``.

``simulator/cli.py`` registers it with one line (``add_parser(sub)``); heavy imports
(onnxruntime, scipy, matplotlib) happen inside the handlers. ``compare`` and
``published`` have their own modules (:mod:`calibration.cli_compare`,
:mod:`calibration.cli_published`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from calibration.cli_compare import add_compare_parser
from calibration.cli_published import add_published_parser
from calibration.layout import DEFAULT_OUT
from calibration.statistic import AUTO_STATISTIC_TEXT, STATISTIC_CHOICES, STATISTICS
from simulator.errors import SocsimError
from simulator.exitcodes import EXIT_OK
from simulator.output import check_output_dir, check_output_file

DEFAULT_DEVICE = Path("scenarios/devices/host_cpu.yaml")
DEFAULT_DOCS = Path("docs/calibration.md")
DEFAULT_IMAGE = Path("docs/img/calibration_pred_vs_measured.png")


def _settings(args: argparse.Namespace):
    from calibration.ortrun import RunSettings

    return RunSettings(
        threads=getattr(args, "threads", 1),
        warmup=args.warmup,
        runs=args.runs,
        rounds=args.rounds,
        clock=args.clock,
        budget_s=args.budget_s,
        min_runs=args.min_runs,
    )


def _progress(text: str) -> None:
    """Progress lines go to stderr (stdout keeps the results)."""
    print(text, file=sys.stderr, flush=True)


def cmd_measure(args: argparse.Namespace) -> int:
    from calibration.pipeline import Layout, measure_corpora

    check_output_dir(args.output, "the measurement folder")  # before minutes of measuring
    corpora = ("fit", "holdout") if args.corpus == "both" else (args.corpus,)
    micro = "fit" in corpora if args.micro is None else args.micro
    names = tuple(args.model or ())
    if names and len(corpora) > 1:
        raise SocsimError("--model picks models of one corpus: give --corpus fit or holdout")
    selection = {corpus: names for corpus in corpora}
    if args.quick and not names:
        from calibration.corpus import QUICK

        selection = {corpus: QUICK[corpus] for corpus in corpora}
    settings = _settings(args)
    tables = measure_corpora(
        selection,
        Layout(Path(args.output), settings.threads),
        settings,
        micro,
        quick=args.quick,
        log=_progress,
    )
    layout = Layout(Path(args.output), settings.threads)
    for corpus, table in tables.items():
        target = layout.fit_csv if corpus == "fit" else layout.holdout_csv
        print(f"{corpus}: {len(table)} rows -> {target}")
    return EXIT_OK


def _kinds(pairs: list[str]) -> dict[str, str]:
    out = {}
    for text in pairs:
        key, sep, value = text.rpartition("=")
        if not sep or not key:
            raise SocsimError(f"--kind takes NODE_TYPE=KIND, got '{text}'")
        out[key] = value
    return out


def cmd_import(args: argparse.Namespace) -> int:
    from calibration.importers import IMPORTERS
    from calibration.table import Provenance, write_table

    check_output_file(args.output, "the measurement CSV")
    if args.format == "tflite" and not (args.work and args.model):
        raise SocsimError("--format tflite needs --work FILE (node,flops,bytes) and --model NAME")
    table = IMPORTERS[args.format](
        Path(args.file),
        work=Path(args.work) if args.work else None,
        model=args.model,
        kinds=_kinds(args.kind),
        threads=args.threads,
    )
    provenance = Provenance(
        args.date or "unknown", args.host or "unknown", args.runtime or args.format, args.threads
    )
    write_table(table, Path(args.output), provenance)
    print(f"{len(table)} rows -> {args.output}")
    return EXIT_OK


def _peak(text: str) -> tuple[str, float]:
    """``DTYPE=GFLOPS`` of ``--peak-gflops`` -> (dtype, FLOP/s)."""
    from simulator.graph.model import DTYPE_BYTES

    dtype, sep, value = text.partition("=")
    try:
        gflops = float(value)
    except ValueError:
        gflops = math.nan
    if not sep or dtype not in DTYPE_BYTES or not gflops > 0:
        raise SocsimError(
            f"--peak-gflops takes DTYPE=GFLOPS with DTYPE one of {', '.join(DTYPE_BYTES)} and "
            f"GFLOPS > 0, got '{text}'"
        )
    return dtype, gflops * 1e9


def cmd_fit(args: argparse.Namespace) -> int:
    from calibration.fit import HostRates
    from calibration.pipeline import fit_file

    check_output_file(args.output, "the device preset")
    rates = None
    if args.peak_gflops or args.bandwidth_gb_s:
        if not (args.peak_gflops and args.bandwidth_gb_s):
            raise SocsimError("give both --peak-gflops and --bandwidth-gb-s, or neither")
        rates = HostRates(
            dict(_peak(text) for text in args.peak_gflops), args.bandwidth_gb_s * 1e9, args.threads
        )
    result, _ = fit_file(
        Path(args.measurements), Path(args.output), rates, statistic=args.statistic
    )
    print(
        f"fitted {result.op_stats['n']} ops: op MAPE {result.op_stats['mape']:.1f} %, "
        f"within ±10 % {result.op_stats['within_10'] * 100:.0f} %; "
        f"dispatch {result.dispatch_s * 1e6:.2f} µs, "
        f"bandwidth {result.bandwidth_bps / 1e9:.1f} GB/s"
    )
    print(f"-> {args.output}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from calibration.pipeline import Layout, validate_single
    from calibration.validate import summary

    layout = Layout(check_output_dir(args.output, "the validation folder"))
    layout.out.mkdir(parents=True, exist_ok=True)
    table, report = validate_single(
        Path(args.measurements), Path(args.device), layout, statistic=args.statistic
    )
    (layout.out / "validation.md").write_text(report)
    figures = summary(table)
    print(
        f"{figures['n']} held-out models: MAPE {figures['mape']:.1f} %, within ±10 % "
        f"{figures['within_10'] * 100:.0f} % -> {layout.out / 'validation.md'}"
    )
    return EXIT_OK


def cmd_all(args: argparse.Namespace) -> int:
    from calibration.pipeline import run_all

    out = Path(args.output)
    # --no-docs writes nothing inside the repository: preset and figure go to -o
    # unless given explicitly
    docs = None if args.no_docs else Path(args.docs)
    device = Path(args.device or (out / DEFAULT_DEVICE.name if args.no_docs else DEFAULT_DEVICE))
    image = Path(args.image or (out / DEFAULT_IMAGE.name if args.no_docs else DEFAULT_IMAGE))
    threads = tuple(sorted(set(args.threads_list))) if args.threads_list else None
    # every place it writes, checked before the measuring (minutes) begins
    check_output_dir(out, "the work folder")
    check_output_file(device, "the device preset")
    check_output_file(image, "the figure")
    if docs is not None:
        check_output_file(docs, "the docs page")
    run_all(
        out,
        device,
        docs,
        image,
        _settings(args),
        quick=args.quick,
        log=_progress,
        statistic=args.statistic,
        refit=args.refit,
        **({"threads": threads} if threads else {}),
    )
    return EXIT_OK


def _run_options(parser: argparse.ArgumentParser, threads: bool = True) -> None:
    from calibration.run_budget import BUDGET_S, MIN_RUNS

    if threads:
        parser.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    parser.add_argument(
        "--runs", type=int, default=100, help="timed runs at most, per model (default 100)"
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=BUDGET_S,
        help="timed seconds per model and session: fewer runs for big models, at least "
        f"--min-runs (default {BUDGET_S}; 0 = always --runs)",
    )
    parser.add_argument(
        "--min-runs",
        type=int,
        default=MIN_RUNS,
        help=f"fewest timed runs of a model, whatever the budget (default {MIN_RUNS})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="interleaved rounds the runs spread over (default 10)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="end-to-end clock: wall (default), or the thread's CPU time (threads = 1; "
        "ignores preemption on a shared machine)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a few small models and microbenchmarks (tests)"
    )


def _statistic(parser: argparse.ArgumentParser, default: str | None = "auto") -> None:
    parser.add_argument(
        "--statistic",
        choices=STATISTIC_CHOICES if default == "auto" else STATISTICS,
        default=default,
        help="each measured time: the median of its runs, their lower quartile q1 "
        "(robust to runs slowed by other processes) or their trimmed mean (their "
        "kernels add up to the model's)"
        + (
            "; auto: " + AUTO_STATISTIC_TEXT + " (default auto)"
            if default == "auto"
            else " (default: the preset's)"
        ),
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` subcommand (and its own subcommands) to the ``socsim`` parser."""
    calibrate = sub.add_parser("calibrate", help="measure the host, fit a device preset, validate")
    steps = calibrate.add_subparsers(dest="step", required=True)

    measure = steps.add_parser("measure", help="run a model corpus with onnxruntime, per node")
    measure.add_argument("--corpus", choices=("fit", "holdout", "both"), default="fit")
    measure.add_argument("--model", action="append", help="only this corpus model (repeatable)")
    measure.add_argument(
        "--micro",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="microbenchmarks too (default: with the fit corpus)",
    )
    measure.add_argument("-o", "--output", default=str(DEFAULT_OUT), help="folder")
    _run_options(measure)
    measure.set_defaults(handler=cmd_measure)

    fit = steps.add_parser("fit", help="fit a measurement table, write a device preset")
    fit.add_argument("measurements", help="measurement CSV (fit corpus)")
    fit.add_argument("-o", "--output", default=str(DEFAULT_DEVICE), help="device YAML")
    fit.add_argument(
        "--peak-gflops",
        action="append",
        metavar="DTYPE=GFLOPS",
        help="peak instead of microbenchmark rows (repeatable)",
    )
    fit.add_argument("--bandwidth-gb-s", type=float, help="bandwidth instead of microbenchmarks")
    fit.add_argument("--threads", type=int, default=1, help="cores of the measured runs")
    _statistic(fit)
    fit.set_defaults(handler=cmd_fit)

    validate = steps.add_parser("validate", help="predict held-out models, compare, plot")
    validate.add_argument("measurements", help="measurement CSV (hold-out corpus)")
    validate.add_argument("--device", default=str(DEFAULT_DEVICE), help="fitted device YAML")
    validate.add_argument("-o", "--output", default=str(DEFAULT_OUT), help="folder")
    _statistic(validate, None)
    validate.set_defaults(handler=cmd_validate)

    imp = steps.add_parser("import-csv", help="per-op times measured elsewhere -> table")
    imp.add_argument("file", help="generic CSV, or benchmark_model --enable_op_profiling text")
    imp.add_argument("--format", choices=("csv", "tflite"), default="csv")
    imp.add_argument("--work", help="tflite: CSV node,flops,bytes[,dtype] of the profiled nodes")
    imp.add_argument("--model", help="tflite: the model's name")
    imp.add_argument(
        "--kind",
        action="append",
        default=[],
        metavar="NODE_TYPE=KIND",
        help="tflite: op kind of a node type (repeatable)",
    )
    imp.add_argument("--threads", type=int, default=1)
    imp.add_argument("--host", help="provenance: the device")
    imp.add_argument("--runtime", help="provenance: runtime and version")
    imp.add_argument("--date", help="provenance: when measured")
    imp.add_argument("-o", "--output", required=True, help="measurement CSV")
    imp.set_defaults(handler=cmd_import)

    add_published_parser(steps)

    every = steps.add_parser("all", help="measure, fit, validate, write the preset and report")
    every.add_argument("-o", "--output", default=str(DEFAULT_OUT), help="work folder")
    every.add_argument(
        "--device",
        help=f"1-thread device YAML to write (default {DEFAULT_DEVICE}; with --no-docs, in -o); "
        "the 2-thread one goes next to it as <stem>_2t.yaml",
    )
    every.add_argument("--docs", default=str(DEFAULT_DOCS), help="docs page to update")
    every.add_argument(
        "--image", help=f"figure to write (default {DEFAULT_IMAGE}; with --no-docs, in -o)"
    )
    every.add_argument(
        "--no-docs",
        action="store_true",
        help="write nothing inside the repository: no docs page; preset and figure in -o",
    )
    every.add_argument(
        "--threads",
        dest="threads_list",
        type=int,
        action="append",
        help="thread counts to calibrate (repeatable; default 1 and 2)",
    )
    every.add_argument(
        "--refit",
        action="store_true",
        help="measure nothing: fit, validate and report again from the tables an earlier "
        "run left in -o",
    )
    _run_options(every, threads=False)
    _statistic(every)
    every.set_defaults(handler=cmd_all)
    add_compare_parser(steps)
