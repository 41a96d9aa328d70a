"""``socsim score``: the five-indicator scorecard of a scenario's ``score:`` section.

``simulator/cli.py`` registers it with one line (``add_parser(sub)``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.exitcodes import EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from analysis.score_chart import score_chart  # lazy: matplotlib only when scoring
    from simulator.score import score_scenario
    from simulator.spec import load_scenario

    scenario = load_scenario(args.scenario)
    frame = score_scenario(scenario)
    out_dir = Path(args.output) if args.output else Path("runs") / scenario.name / "score"
    out_dir.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out_dir / "scorecard.csv", index=False)
    charts = [
        score_chart(frame, out_dir / f"scorecard.{suffix}") for suffix in (args.format or ["png"])
    ]
    shown = frame[
        [
            "combination",
            "placement",
            "accuracy_top1",
            "latency_p50_s",
            "latency_p99_s",
            "device_inferences_per_j",
            "peak_memory_bytes",
            "flexibility",
            "unsupported_ops",
            "custom_ops",
            "pareto",
        ]
    ]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"\nwrote {out_dir / 'scorecard.csv'} and {', '.join(str(c) for c in charts)}")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``score`` subcommand to the top-level parser."""
    score = sub.add_parser(
        "score",
        help="five-indicator scorecard: technique combinations x placements (score: section)",
    )
    score.add_argument("scenario", help="scenario YAML file with a 'score:' section")
    score.add_argument("-o", "--output", help="output folder (default: runs/<name>/score)")
    score.add_argument(
        "--format",
        action="append",
        choices=("png", "svg"),
        default=None,
        help="chart format (repeatable; default png)",
    )
    score.set_defaults(handler=cmd_score, format=None)
