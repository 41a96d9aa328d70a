"""``socsim sweep``: the command-line face of :mod:`simulator.sweep`.

``simulator/cli.py`` registers it with one line (``add_parser(sub)``); errors are
raised and turned into exit statuses there.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from simulator.errors import Problem, ScenarioError
from simulator.exitcodes import EXIT_OK
from simulator.output import check_output_dir, default_output_dir
from simulator.spec.paths import add_allow_options
from simulator.spec.yamlio import load_yaml_text, plain

_FUNCTION = re.compile(r"^(lin|log)\((.*)\)$")


def _scalar(text: str) -> Any:
    """A value as YAML reads it, but ``1e6`` is a number (YAML 1.1 reads it as text)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if not text.strip():
        return text
    try:  # the size-limited loader of files: an alias bomb is refused, not expanded
        return plain(load_yaml_text(text, "--set"))
    except ScenarioError:  # e.g. '@x' or a control character: the text as written
        return text


def parse_assignment(text: str) -> tuple[str, Any]:
    """``PATH=VALUE`` of ``socsim run --set`` -> (path, value), the value read as YAML
    (``placement={policy: single, unit: gpu}``, ``links.up.latency_ms=5``), as one value
    of the sweep's ``--set``.

    Raises
    ------
    ScenarioError
        Naming ``--set`` and what was expected.
    """
    path, sep, value = text.partition("=")
    if not sep or not path.strip() or not value.strip():
        raise ScenarioError(
            [Problem(text, "--set takes PATH=VALUE, e.g. links.uplink.bandwidth_mbps=20")]
        )
    return path.strip(), _scalar(value.strip())


def parse_set(text: str) -> tuple[str, Any]:
    """``PATH=VALUES`` of ``--set`` -> (path, the values as a ``sweep.parameters`` entry).

    ``a,b,c`` lists values; ``START:STOP:STEP`` is an inclusive arithmetic range;
    ``lin(START,STOP,N)`` and ``log(START,STOP,N)`` are N evenly or geometrically
    spaced values; ``START:STOP`` is a continuous range (random and lhs designs).

    Raises
    ------
    ScenarioError
        Naming ``--set`` and what was expected.
    """
    path, sep, values = text.partition("=")
    if not sep or not path or not values:
        raise ScenarioError(
            [Problem(text, "--set takes PATH=VALUES, e.g. links.up.latency_ms=5,50")]
        )
    path, values = path.strip(), values.strip()
    function = _FUNCTION.match(values)
    if function:
        parts = [_scalar(p.strip()) for p in function.group(2).split(",")]
        if len(parts) != 3:
            raise ScenarioError(
                [
                    Problem(
                        path,
                        f"{function.group(1)}(START,STOP,N) takes three numbers, got '{values}'",
                    )
                ]
            )
        start, stop, num = parts
        return path, {"start": start, "stop": stop, "num": num, "log": function.group(1) == "log"}
    if ":" in values and "," not in values:
        parts = [_scalar(p.strip()) for p in values.split(":")]
        if len(parts) == 2:
            return path, {"start": parts[0], "stop": parts[1]}
        if len(parts) == 3:
            return path, {"start": parts[0], "stop": parts[1], "step": parts[2]}
        raise ScenarioError([Problem(path, f"a range is START:STOP[:STEP], got '{values}'")])
    return path, [_scalar(v.strip()) for v in values.split(",")]


def cmd_sweep(args: argparse.Namespace) -> int:
    from simulator.sweep.runner import prepare_sweep, run_prepared

    say = (lambda text: None) if args.json else print  # --json: stdout is the JSON only

    parameters = dict(parse_set(text) for text in args.set)
    prepared = prepare_sweep(
        args.scenario,
        parameters,
        design=args.design,
        samples=args.samples,
        replicates=args.replicates,
        mc_samples=args.mc_samples,
        fast=True if args.fast else None,
        executor=args.executor,
        workers=args.workers,
        scheduler=args.scheduler,
        allow_dirs=args.allow_dirs,
        allow_plugins=args.allow_plugins,
    )
    name = prepared.meta["scenario"]
    out = check_output_dir(
        Path(args.output) if args.output else default_output_dir(name, "_sweep"),
        "the sweep folder",
    )
    spec = prepared.spec
    points = len(prepared.points) // (spec.mc_samples or 1)
    sampled = f" x {spec.mc_samples} Monte Carlo sample(s)" if spec.mc_samples else ""
    say(
        f"sweep {name}: {points} point(s){sampled} x "
        f"{spec.replicates} replicate(s), design {spec.design}, executor {spec.executor}"
    )
    args.kept = f"the finished runs are in {out}/; run the same command to resume"
    table = run_prepared(
        prepared,
        out,
        quiet=args.quiet,
        restart=args.restart,
        repair=args.repair,
        # rows discarded or repaired: said even with -q (it is the user's data)
        notify=lambda note: print(f"note: {note}", file=sys.stderr),
    )
    failed = table[table["status"] != "ok"]
    if spec.mc_samples:
        from simulator.output import write_csv
        from simulator.uncertainty.intervals import sweep_intervals

        intervals = sweep_intervals(table, spec.paths, spec.mc_samples)
        write_csv(intervals, out / "intervals.csv")
        say(f"wrote the Monte Carlo intervals of every point to {out}/intervals.csv")
    if args.json:
        from simulator.cli_json import sweep_json

        print(sweep_json(prepared.meta, points, table, out, spec))
        return EXIT_OK
    print(f"wrote {len(table)} row(s) to {out}/ ({len(failed)} failed)")
    for row in failed.head(5).itertuples():
        print(f"  point {row.point} replicate {row.replicate}: {row.error}")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``sweep`` subcommand to the ``socsim`` parser."""
    sweep = sub.add_parser(
        "sweep", help="run a parameter sweep (sweep: section and/or --set), write one table"
    )
    sweep.add_argument("scenario", help="scenario YAML file")
    sweep.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUES",
        help="sweep a scenario path: a,b,c | START:STOP:STEP | lin(A,B,N) | log(A,B,N) | "
        "START:STOP (random, lhs) (repeatable)",
    )
    # no argparse choices: the names are checked with the sweep section, against the
    # registries (plug-ins included, loaded then rather than for every --help)
    sweep.add_argument(
        "--design", help="grid, zip, random, lhs or a plug-in's (default: the section's, or grid)"
    )
    sweep.add_argument("--samples", type=int, help="points drawn by the random and lhs designs")
    sweep.add_argument("--replicates", type=int, help="runs per point (default 1)")
    sweep.add_argument(
        "--mc-samples",
        type=int,
        help="Monte Carlo samples of the scenario's distributions per point (docs/uncertainty.md)",
    )
    sweep.add_argument(
        "--executor", help="serial, processes, dask or a plug-in's (default: processes)"
    )
    sweep.add_argument("--workers", type=int, help="worker processes (default: every core)")
    sweep.add_argument("--scheduler", help="dask scheduler address, e.g. tcp://host:8786")
    sweep.add_argument("-o", "--output", help="sweep folder (default: runs/<name>_sweep)")
    sweep.add_argument(
        "--fast", action="store_true", help="lone-request points: analytic estimate, no engine"
    )
    sweep.add_argument(
        "--json", action="store_true", help="print one JSON object (rows, failures, folder)"
    )
    sweep.add_argument(
        "--restart",
        action="store_true",
        help="discard the rows already in -o (another or a damaged sweep) and run from scratch",
    )
    sweep.add_argument(
        "--repair",
        action="store_true",
        help="drop bad lines of the folder's journal and run their points again",
    )
    add_allow_options(sweep)
    sweep.set_defaults(handler=cmd_sweep)
