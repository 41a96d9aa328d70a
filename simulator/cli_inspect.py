"""``socsim zoo`` and ``socsim explain``: the commands that print a model's layers or each
app's placement and write no tables (``zoo --onnx`` writes the one file it is asked
for). :func:`add_zoo_parser` and :func:`add_explain_parser` add them to the ``socsim``
parser (:func:`simulator.cli.build_parser`). Imported by ``socsim --help``, so every
heavy import is inside a function."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simulator.cli_text import print_table
from simulator.errors import SocsimError
from simulator.exitcodes import EXIT_OK
from simulator.spec.paths import add_allow_options


def add_zoo_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``socsim zoo`` to the subcommands ``sub``."""
    zoo = sub.add_parser("zoo", help="list the model zoo, or print one model's layers")
    zoo.add_argument("name", nargs="?")
    zoo.add_argument("--dtype", default="fp32", choices=("fp32", "fp16", "int8"))
    zoo.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="builder option, e.g. width_multiplier=0.5 (repeatable)",
    )
    zoo.add_argument(
        "--onnx", metavar="FILE", help="write the model as an ONNX file (CNNs; seeded weights)"
    )
    zoo.add_argument("--seed", type=int, default=0, help="weight seed of --onnx (default 0)")
    zoo.set_defaults(handler=cmd_zoo)


def add_explain_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``socsim explain`` to the subcommands ``sub``."""
    explain = sub.add_parser(
        "explain", help="show each app's placement, cut tensors, predicted vs simulated"
    )
    explain.add_argument("scenario")
    explain.add_argument(
        "--app",
        action="append",
        default=[],
        metavar="NAME",
        help="explain only this app (repeatable); a fleet's entry (camera) names all its "
        "members, one member is camera[3]",
    )
    add_allow_options(explain)
    explain.set_defaults(handler=cmd_explain)


def selected_apps(scenario: Any, names: list[str]) -> list[Any]:
    """The workload entries ``--app`` names, in workload order (all without names).

    A name is an app (``camera[3]``) or a workload entry as the document writes it
    (``camera``, a fleet's entry: every member's app).

    Raises
    ------
    SocsimError
        For a name that is neither, with the nearest app.
    """
    from simulator.rules import collapse_members
    from simulator.schema import nearest

    if not names:
        return list(scenario.workload)
    written = {app: entry_app for app, (entry_app, _) in scenario.fleets.apps.items()}
    known = [entry.app for entry in scenario.workload]
    for name in names:
        if name not in known and name not in written.values():
            hint = nearest(name, [*known, *written.values()])
            tip = f" (did you mean '{hint}'?)" if hint else ""
            apps = ", ".join(collapse_members(known))
            raise SocsimError(f"--app: no app '{name}'{tip}; apps: {apps}")
    wanted = set(names)
    return [e for e in scenario.workload if e.app in wanted or written.get(e.app) in wanted]


def cmd_zoo(args: argparse.Namespace) -> int:
    """``socsim zoo``: the zoo's models, or one model's layers (or its ONNX file)."""
    from simulator.graph.zoo import build_zoo_model, zoo_table

    if not args.name:
        table = zoo_table()
        table["params"] = table["params"].map("{:,}".format)
        table["macs"] = (table["macs"] / 1e6).map("{:,.1f} M".format)
        print_table(table)
        return EXIT_OK
    if args.onnx:
        from simulator.output import check_output_file

        check_output_file(args.onnx, "the ONNX file")
    options = dict(_parse_option(text) for text in args.option)
    graph = build_zoo_model(args.name, args.dtype, **options)
    if args.onnx:
        from simulator.graph.onnx_export import write_onnx

        if args.dtype != "fp32":
            raise SocsimError("--onnx exports fp32 graphs only (drop --dtype)")
        path = write_onnx(graph, Path(args.onnx), seed=args.seed)
        print(f"{graph.name}: {len(graph)} ops, {graph.total_params:,} params -> {path}")
        return EXIT_OK
    print_table(graph.layer_table())
    print(
        f"\n{graph.name}: {len(graph)} ops, {graph.total_params:,} params, "
        f"{graph.total_macs / 1e6:,.2f} M MACs, "
        f"{graph.weight_bytes / 1e6:,.2f} MB of weights ({args.dtype})"
    )
    return EXIT_OK


def _parse_option(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise SocsimError(f"--option takes KEY=VALUE, got '{text}'")
    key, raw = text.split("=", 1)
    for cast in (int, float):
        try:
            return key, cast(raw)
        except ValueError:
            pass
    return key, raw


def cmd_explain(args: argparse.Namespace) -> int:
    """``socsim explain``: per app, its placement, ops, cut tensors and exits, and the
    predicted latency against the simulated one, the gap split into causes."""
    import pandas as pd

    from simulator.engine import plan_apps, simulate
    from simulator.placement.attribution import gap_table
    from simulator.placement.base import dvfs_basis
    from simulator.placement.estimate import estimate
    from simulator.placement.explain import cut_table, exit_table, op_table, stall_table
    from simulator.platform import CostOracle
    from simulator.spec import load_scenario

    scenario = load_scenario(args.scenario, args.allow_dirs, args.allow_plugins)
    entries = selected_apps(scenario, args.app)  # a wrong name fails before any work
    oracle = CostOracle(scenario.platform)
    plans = plan_apps(scenario, oracle)
    result = simulate(scenario)
    for entry in entries:
        plan = plans[entry.app]
        predicted = estimate(plan, oracle)
        print(
            f"app {entry.app}: model {entry.model} from {entry.source}, "
            f"policy {plan.placement.policy}"
        )
        print(f"  decision: {plan.label}")
        spec = scenario.placements_for(entry)[0]
        print(f"  DVFS levels its choice assumed: {dvfs_basis(spec.name, spec.options)}")
        for key, value in plan.placement.notes.items():
            if isinstance(value, tuple) and value and isinstance(value[0], dict):
                print(f"\n  {key} (predicted for a lone request):")
                print_table(pd.DataFrame(list(value)))
            else:
                print(f"  {key}: {value}")
        exits = exit_table(scenario.models[entry.model], plan, oracle)
        if exits is not None:  # early exits drawn per request (docs/early-exit.md)
            print("\n  exits a request may take (predicted for a lone request):")
            print_table(exits[0])
            print(f"  expected latency over the exits' shares: {exits[1] * 1e3:.4g} ms")
        print("\n  ops (predicted for a lone request; level -1: a unit without DVFS):")
        print_table(op_table(plan, oracle))
        cuts = cut_table(plan, oracle)
        print(f"\n  tensors leaving their unit: {len(cuts)}, {int(cuts['bytes'].sum()):,} bytes")
        if len(cuts):
            print_table(cuts)
        mine = result.requests[result.requests["app"] == entry.app]["latency_s"]
        print(
            f"\n  predicted latency {predicted.latency_s * 1e3:.4g} ms, "
            f"energy {predicted.energy_j * 1e3:.4g} mJ"
            f" (ops + radio, no idle); simulated latency mean {mine.mean() * 1e3:.4g} ms,"
            f" p50 {mine.median() * 1e3:.4g} ms over {len(mine)} request(s)"
        )
        stalls = result.ops[result.ops["app"] == entry.app]["memory_stall_s"]
        if len(mine):
            print(
                f"  memory stall (ops waiting for their node's shared DRAM): "
                f"{stalls.sum() / len(mine) * 1e3:.4g} ms per request"
            )
        gap = gap_table(plan, oracle, entry.app, result.requests, result.ops, result.transfers)
        if len(gap):
            print(
                "\n  predicted vs simulated latency, mean over the requests of this placement "
                "(docs/placement.md#predicted-and-simulated-latency):"
            )
            print_table(gap.assign(ms=[f"{v:.4f}" for v in gap["ms"]]))
        stalled = stall_table(result.ops, entry.app)
        if len(stalled):
            print("\n  ops slowed most by shared DRAM (simulated, mean over requests):")
            print_table(stalled)
        print()
    return EXIT_OK
