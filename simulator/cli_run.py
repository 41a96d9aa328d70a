"""Helpers of ``socsim run`` (:func:`simulator.cli.cmd_run`): the scenario with ``--set``
values, the progress line, the placements ``-v`` shows. Imported by ``socsim --help``, so
every heavy import is inside a function."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def load_run_scenario(args: argparse.Namespace):
    """The scenario of ``socsim run`` and the document its placement problems point into
    (None: the file as loaded); with ``--set PATH=VALUE`` the values are set as in a
    sweep point (:func:`simulator.sweep.points.scenario_with_values`)."""
    from simulator.spec import load_scenario
    from simulator.sweep.cli import parse_assignment

    if not args.set:
        return load_scenario(args.scenario, args.allow_dirs, args.allow_plugins), None
    from simulator.sweep.points import scenario_with_values

    values = dict(parse_assignment(text) for text in args.set)
    return scenario_with_values(args.scenario, values, args.allow_dirs, args.allow_plugins)


def log_placements(apps: pd.DataFrame) -> None:
    """``-v``: the placement each app (and replica) got, on the ``socsim.run`` logger."""
    log = logging.getLogger("socsim.run")
    for row in apps.itertuples():
        log.info(
            "app %s (replica %s): policy %s -> %s on %s, predicted %.4g ms",
            row.app, row.replica, row.policy, row.decision, row.units_used,
            row.predicted_latency_s * 1e3,
        )  # fmt: skip


def stderr_progress(scenario):
    """A ``simulate(progress=...)`` hook printing one line to stderr per report: simulated
    time against the horizon, requests done against the total (where they are known)."""
    from simulator.workload import expected_requests

    entries = scenario.workload
    durations = [e.duration_s for e in entries]
    horizon = max(durations) if None not in durations else None
    counts = [
        expected_requests(e.arrival, e.arrival_options, e.count, e.duration_s) for e in entries
    ]
    total = int(sum(counts)) if None not in counts else None

    def report(now_s: float, issued: int, completed: int) -> None:
        when = f"{now_s:.4g} s" + (f" of {horizon:.4g} s" if horizon else "")
        done = f"{completed:,}" + (f" of {total:,}" if total else f" ({issued:,} issued)")
        print(f"socsim run: simulated {when}, {done} requests done", file=sys.stderr, flush=True)

    return report
