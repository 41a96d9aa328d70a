"""``socsim plot`` and ``socsim report``: wired into ``simulator.cli`` lazily.

Errors are raised as :class:`~simulator.errors.SocsimError`; ``simulator.cli.main``
prints them and sets the exit status.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.exitcodes import EXIT_OK
from simulator.output import check_output_file

# CLI flag -> plot option; each kind accepts the subset its options record lists
_OPTION_FLAGS = (
    (
        "--x",
        "x",
        str,
        "x axis: a swept path; pareto: an indicator (accuracy, latency, "
        "energy, memory, flexibility) or column",
    ),
    ("--y", "y", str, "y axis: a swept path (decision_map); pareto: an indicator or column"),
    ("--by", "by", str, "column the points compete over (decision_map)"),
    ("--metric", "metric", str, "summary column to plot or to rank by"),
    ("--latency", "latency", str, "latency column (decision_map, pareto)"),
    ("--energy", "energy", str, "energy column (decision_map, pareto)"),
    ("--group", "group", str, "one line per value of this column (curves)"),
    ("--colour", "colour", str, "categorical colour column (pareto)"),
    ("--requests", "requests", int, "first N requests only (gantt)"),
    ("--title", "title", str, "figure title"),
)


def cmd_plot(args: argparse.Namespace) -> int:
    from analysis.kinds import make_plot
    from analysis.sources import load_source
    from analysis.style import save_figure

    source = load_source(args.source)
    options = {dest: getattr(args, dest) for _, dest, _, _ in _OPTION_FLAGS}
    options["where"] = dict(_parse_where(text) for text in args.where)
    default = (source.path if source.path.is_dir() else source.path.parent) / f"{args.kind}.png"
    out = check_output_file(Path(args.output) if args.output else default, "the figure")
    figure = make_plot(args.kind, source, **options)
    written = save_figure(figure, out)
    args.kept = f"the figure is complete in {written}"
    print(f"wrote {written}")
    return EXIT_OK


def _parse_where(text: str) -> tuple[str, str]:
    from simulator.errors import SocsimError

    column, sep, value = text.partition("=")
    if not sep or not column:
        raise SocsimError(f"--where takes PATH=VALUE, got '{text}'")
    return column, value


def cmd_report(args: argparse.Namespace) -> int:
    from analysis.report import write_report

    source = Path(args.source)
    default = (source if source.is_dir() else source.parent) / "report.html"
    out = check_output_file(Path(args.output) if args.output else default, "the report")
    written = write_report(source, out, args.format)
    args.kept = f"the report is complete in {written}"
    print(f"wrote {written}")
    return EXIT_OK


def add_plot_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``socsim plot KIND SOURCE [-o FILE] [options]`` to ``sub``."""
    # the kinds registry imports matplotlib: not while building the parser of every command
    plot = sub.add_parser(
        "plot", help="draw one figure of a run folder or a sweep (png, svg or pdf)"
    )
    plot.add_argument(
        "kind", help="plot kind (docs/plots.md; an unknown name lists the valid ones)"
    )
    plot.add_argument("source", help="a run folder (socsim run -o DIR) or a sweep folder/table")
    plot.add_argument("-o", "--output", help="FILE.png|svg|pdf (default: SOURCE/KIND.png)")
    for flag, dest, kind, text in _OPTION_FLAGS:
        plot.add_argument(flag, dest=dest, type=kind, default=None, help=text)
    plot.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="keep the sweep rows where a column has this value (repeatable)",
    )
    plot.set_defaults(handler=cmd_plot)


def add_report_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``socsim report RUN_OR_SWEEP_DIR [-o report.html]`` to ``sub``."""
    report = sub.add_parser(
        "report", help="write one self-contained HTML page of a run or sweep's figures and tables"
    )
    report.add_argument("source", help="a run folder or a sweep folder/table")
    report.add_argument("-o", "--output", help="HTML file (default: SOURCE/report.html)")
    report.add_argument(
        "--format", choices=("png", "svg"), default="png", help="how figures are embedded"
    )
    report.set_defaults(handler=cmd_report)
