"""``socsim calibrate compare DIR1 DIR2``: how far two ``calibrate all`` runs agree
(:mod:`calibration.compare` computes it; this module is its command line)."""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.exitcodes import EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    """``socsim calibrate compare``: print the comparison (and splice it into ``--docs``);
    exit status 1 when a prediction moved more than ``--tolerance`` %."""
    from calibration.compare import compare_folders, compare_markdown
    from calibration.report import STABILITY_BEGIN, STABILITY_END, splice_report
    from simulator.exitcodes import EXIT_INVALID

    first, second = Path(args.first), Path(args.second)
    summaries = compare_folders(first, second)
    text = compare_markdown(first, second, summaries)
    print(text)
    if args.docs:
        splice_report(Path(args.docs), text, STABILITY_BEGIN, STABILITY_END)
    worst = max(s["within_pct"] for s in summaries)
    return EXIT_OK if worst <= args.tolerance else EXIT_INVALID


def add_compare_parser(steps: argparse._SubParsersAction) -> None:
    """Add ``compare`` to the ``socsim calibrate`` subcommands."""
    compare = steps.add_parser(
        "compare", help="how far two calibration runs' predictions and measurements agree"
    )
    compare.add_argument("first", help="output folder of one `calibrate all` run (-o)")
    compare.add_argument("second", help="output folder of another run")
    compare.add_argument(
        "--tolerance",
        type=float,
        default=3.0,
        help="exit status 1 when a prediction moved more than this, %% (default 3)",
    )
    compare.add_argument(
        "--docs", help="also write the comparison into this page (its stability markers)"
    )
    compare.set_defaults(handler=cmd_compare)
