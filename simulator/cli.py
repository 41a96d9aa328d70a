"""The ``socsim`` command line: the composition root of the library.

Subcommands: ``run``, ``validate``, ``zoo``, ``explain``, ``sweep``, ``score``,
``presets``, ``plot``, ``report``, ``calibrate``; ``--version``; every subcommand takes
``-q``/``-v`` (:mod:`simulator.cli_logging`). Library
errors are raised as :class:`~simulator.errors.SocsimError`; only here are they printed
and turned into an exit status (:mod:`simulator.exitcodes`).

This module holds ``run`` and ``validate`` and builds the parser; ``zoo`` and
``explain`` are in :mod:`simulator.cli_inspect`, what ``run`` prints in
:mod:`simulator.cli_text`, the other subcommands in their packages' ``cli`` modules.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from simulator.cli_inspect import add_explain_parser, add_zoo_parser
from simulator.cli_logging import add_verbosity_options, socsim_logging
from simulator.cli_outcome import interrupted_before_start, run_command
from simulator.cli_run import load_run_scenario, log_placements, stderr_progress
from simulator.cli_text import format_summary, print_table
from simulator.cli_warnings import socsim_warnings_to_stderr
from simulator.errors import PlacementError, ScenarioError, SocsimError
from simulator.exitcodes import EXIT_INVALID, EXIT_OK
from simulator.score.cli import add_parser as add_score_parser
from simulator.spec.library_cli import add_parser as add_presets_parser
from simulator.spec.library_cli import add_version_option
from simulator.spec.paths import add_allow_options
from simulator.spec.schema_cli import add_parser as add_schema_parser
from simulator.sweep.cli import add_parser as add_sweep_parser


def cmd_run(args: argparse.Namespace) -> int:
    from simulator.engine import simulate
    from simulator.network.radio_range import warn_run
    from simulator.output import check_output_dir, default_output_dir

    check_replicate(args.replicate)
    check_workers(args.workers, args.samples)
    scenario, document = load_run_scenario(args)
    out_dir = check_output_dir(
        Path(args.output) if args.output else default_output_dir(scenario.name)
    )
    if args.samples is not None:  # refused before anything runs
        from simulator.uncertainty import montecarlo as mc

        mc.check_samples(args.samples)
        mc.uncertain_fields(scenario)
    progress = None if args.quiet else stderr_progress(scenario)
    try:
        result = simulate(scenario, replicate=args.replicate, trace=args.trace, progress=progress)
    except PlacementError:
        raise_placement_problems(scenario, args.scenario, document)  # each at its YAML path
        raise
    log_placements(result.apps)
    warn_run(scenario, result, args.scenario)  # radios beyond their measured range
    extra = None
    if args.samples is not None:
        extra = mc.sample_tables(
            scenario, result, args.samples, args.executor, args.workers, args.allow_dirs,
            progress=not args.quiet,
        )  # fmt: skip
    # before printing: a closed stdout loses nothing
    written = result.write(out_dir, extra=extra)
    args.kept = f"the results are complete in {out_dir}/"
    if args.json:
        from simulator.cli_json import run_json

        print(run_json(result, out_dir, written, extra))
        return EXIT_OK
    print(format_summary(result.summary))
    fleets = scenario.fleets
    members = {node for nodes in fleets.members.values() for node in nodes}
    apps = result.apps[~result.apps["app"].isin(list(fleets.apps))]  # fleets: their table
    units = result.units[~result.units["node"].isin(members)]
    if len(apps):
        print("\napps:")
        print_table(
            apps[["app", "model", "policy", "decision", "units_used", "predicted_latency_s"]]
        )
    print("\nunits:" if not members else "\nunits (fleet members: units.csv):")
    print_table(
        units[["unit", "kind", "ops_run", "busy_s", "utilisation", "energy_j", "peak_memory_bytes"]]
    )
    for name in ("fleets", "media"):
        table = getattr(result, name)
        if len(table):
            print(f"\n{name}:")
            print_table(table)
    if extra is not None:
        fields = len(mc.uncertain_fields(scenario))
        print(
            f"\nMonte Carlo: {args.samples} samples of {fields} uncertain figure(s), seeds "
            f"spawned from {scenario.seed} (samples.csv, intervals.csv):"
        )
        from simulator.uncertainty.intervals import shown_intervals

        print_table(shown_intervals(extra["intervals"]))
    print(f"\nwrote {len(written)} files to {out_dir}/")
    return EXIT_OK


MAX_REPLICATE = 2**63 - 1  # the replicate is stored as int64 in every table


def check_workers(workers: int | None, samples: int | None) -> None:
    """``--workers`` is 1 or more, and only with ``--samples`` (the processes it sizes).

    Raises
    ------
    SocsimError
        Naming the option, what it needs and what was given.
    """
    if workers is None:
        return
    if workers < 1:
        raise SocsimError(f"--workers takes 1 or more worker processes, got {workers}")
    if samples is None:
        raise SocsimError(
            "--workers sets the processes that run --samples; give --samples N too, or "
            "drop --workers (a run without samples is one process)"
        )


def check_replicate(replicate: int) -> int:
    """``--replicate`` within 0 .. 2^63 - 1.

    Raises
    ------
    SocsimError
        Naming the option and the range.
    """
    if not 0 <= replicate <= MAX_REPLICATE:
        raise SocsimError(f"--replicate takes 0 to 2^63 - 1 (int64), got {replicate}")
    return replicate


def raise_placement_problems(scenario, path: str, document=None) -> None:
    """Raise a ScenarioError of every placement of ``scenario`` that cannot be made, each at
    its YAML path in the file ``path`` (as ``socsim validate`` reports them), or in
    ``document`` when given; return when every app can be planned."""
    from simulator.placement.check import plan_problems
    from simulator.spec.yamlio import load_yaml_file

    if document is None:
        document = load_yaml_file(Path(path))
    problems = plan_problems(scenario, document, path)
    if problems:
        raise ScenarioError(problems) from None


def cmd_validate(args: argparse.Namespace) -> int:
    from simulator.network.radio_range import warn_scenario
    from simulator.spec import load_scenario, validate_library
    from simulator.spec.yamlio import load_yaml_file

    status = EXIT_OK
    for name in args.files:
        try:
            document = load_yaml_file(Path(name))
            if isinstance(document, dict) and "presets" in document and "nodes" not in document:
                count = validate_library(name, args.allow_dirs)
                print(f"ok   {name}: library with {count} preset(s)")
            else:
                s = load_scenario(name, args.allow_dirs, args.allow_plugins)
                warn_scenario(s, name)  # radios whose links exceed their measured range
                raise_placement_problems(s, name)  # every app placed, as run does
                units = len(s.platform.unit_ids)
                print(
                    f"ok   {name}: {len(s.workload)} app(s), {len(s.models)} model(s), "
                    f"{len(s.platform.nodes)} node(s), {units} unit(s)"
                )
        except ScenarioError as exc:
            status = EXIT_INVALID
            print(f"FAIL {name}: {len(exc.problems)} problem(s)")
            for problem in exc.problems:
                print(f"  - {problem}")
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socsim", description=__doc__.splitlines()[0])
    add_version_option(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a scenario, print its summary, write its tables")
    run.add_argument("scenario", help="scenario YAML file")
    run.add_argument("-o", "--output", help="output folder (default: runs/<scenario name>)")
    run.add_argument("--replicate", type=int, default=0, help="replicate index (default 0)")
    run.add_argument(
        "--trace",
        choices=("full", "summary", "none"),
        default="full",
        help="full: every op and transfer row; summary: no op/transfer rows; none: "
        "aggregates only, bounded memory (default full)",
    )
    run.add_argument(
        "--samples",
        type=int,
        help="also run N Monte Carlo samples of the distributions of the scenario and its "
        "presets; writes samples.csv and intervals.csv (docs/uncertainty.md)",
    )
    run.add_argument(
        "--executor",
        choices=("serial", "processes", "dask"),
        default="processes",
        help="who runs the samples (default processes; results do not depend on it)",
    )
    run.add_argument("--workers", type=int, help="worker processes of --samples (default: cores)")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="set a scenario path, as a sweep point does, e.g. links.uplink.bandwidth_mbps=20 "
        "(after presets are expanded; repeatable)",
    )
    run.add_argument(
        "--json", action="store_true", help="print one JSON object: summary, apps, output folder"
    )
    add_allow_options(run)
    run.set_defaults(handler=cmd_run)

    validate = sub.add_parser("validate", help="check scenario or library files without running")
    validate.add_argument("files", nargs="+")
    add_allow_options(validate)
    validate.set_defaults(handler=cmd_validate)

    add_zoo_parser(sub)
    add_explain_parser(sub)
    add_sweep_parser(sub)
    add_score_parser(sub)
    add_presets_parser(sub)
    add_schema_parser(sub)

    from analysis.cli import add_plot_parser, add_report_parser  # the composition root
    from calibration.cli import add_parser as add_calibrate_parser

    add_calibrate_parser(sub)

    add_plot_parser(sub)
    add_report_parser(sub)
    for command in sub.choices.values():
        add_verbosity_options(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``socsim`` console script; returns the exit status
    (:mod:`simulator.exitcodes`; argparse usage errors exit with 2 itself)."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the command line is read (start-up is lazy)
        return interrupted_before_start()
    handler: Callable[[argparse.Namespace], int] = args.handler
    with socsim_warnings_to_stderr(), socsim_logging(args):
        return run_command(handler, args)


if __name__ == "__main__":
    sys.exit(main())
