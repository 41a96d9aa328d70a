"""A scenario's ``score:`` section: checked, then scored (:mod:`simulator.score.card`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from simulator.errors import ScenarioError
from simulator.placement.base import PlacementSpec
from simulator.schema import INVALID, Context, Loc
from simulator.score.card import Combination, score_rows
from simulator.spec.scenario import Scenario
from simulator.spec.scoredefs import SCORE


def score_section(scenario: Scenario) -> dict[str, Any]:
    """The scenario's checked ``score:`` section: app, combinations, placements.

    Raises
    ------
    ScenarioError
        When there is none or it is invalid (problems name ``score.*`` paths).
    """
    raw = scenario.document.get("score")
    ctx = Context(default_file=scenario.source_file)
    if raw is None:
        ctx.problem(Loc("score"), "no 'score:' section: give combinations and placements")
        raise ScenarioError(ctx.problems)
    checked = SCORE.check(raw, Loc("score", scenario.document, "score"), ctx)
    if checked is INVALID or ctx.problems:
        raise ScenarioError(ctx.problems)
    return {
        "app": checked["app"],
        "combinations": {
            name: Combination(c["model"], tuple(c["techniques"]))
            for name, c in checked["combinations"].items()
        },
        "placements": {
            name: PlacementSpec(p["policy"], {k: v for k, v in p.items() if k != "policy"})
            for name, p in checked["placements"].items()
        },
    }


def score_scenario(scenario: Scenario) -> pd.DataFrame:
    """The scorecard of the scenario's ``score:`` section (see :func:`score_rows`)."""
    section = score_section(scenario)
    return score_rows(scenario, section["combinations"], section["placements"], section["app"])
