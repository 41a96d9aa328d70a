"""``socsim score``: the five-indicator scorecard of a scenario's ``score:`` section.

``simulator/cli.py`` registers it with one line (``add_parser(sub)``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.exitcodes import EXIT_OK
from simulator.spec.paths import add_allow_options


def cmd_score(args: argparse.Namespace) -> int:
    from analysis.score_chart import score_chart  # lazy: matplotlib only when scoring
    from simulator.output import check_output_dir, default_output_dir, staged_dir, write_csv
    from simulator.score import score_scenario
    from simulator.spec import load_scenario

    scenario = load_scenario(args.scenario, args.allow_dirs, args.allow_plugins)
    out_dir = check_output_dir(
        Path(args.output) if args.output else default_output_dir(scenario.name, "", "score")
    )
    frame = score_scenario(scenario)
    names = ["scorecard.csv", *(f"scorecard.{suffix}" for suffix in args.format or ["png"])]
    with staged_dir(out_dir) as stage:  # the table and its charts appear together
        write_csv(frame, stage / names[0])
        for name in names[1:]:
            score_chart(frame, stage / name)
    args.kept = f"the scorecard is complete in {out_dir}/"
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
    print(f"\nwrote {', '.join(str(out_dir / name) for name in names)}")
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
    add_allow_options(score)
    score.set_defaults(handler=cmd_score, format=None)
