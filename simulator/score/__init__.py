"""The five-indicator scorecard of deployment techniques (docs/techniques.md).

:func:`score_rows` is the sweep-friendly API (combinations x placements -> one flat row
each); :func:`score_scenario` reads them from a scenario's ``score:`` section. The names
are imported on first use (:mod:`simulator.lazy`): ``socsim score --help`` imports this
package, not pandas.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the re-exports, listed in __all__)

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.lazy import lazy_exports

_EXPORTS = {
    "INDICATOR_COLUMNS": "simulator.score.card",
    "PARETO_INDICATORS": "simulator.score.card",
    "Combination": "simulator.score.card",
    "describe": "simulator.score.card",
    "flexibility": "simulator.score.card",
    "pareto_mask": "simulator.score.card",
    "peak_memory": "simulator.score.card",
    "sense": "simulator.score.card",
    "INDICATOR_KEYS": "simulator.score.indicators",
    "app_flexibility": "simulator.score.indicators",
    "scenario_indicators": "simulator.score.indicators",
    "score_rows": "simulator.score.card",
    "score_scenario": "simulator.score.section",
    "score_section": "simulator.score.section",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from simulator.score.card import (
        INDICATOR_COLUMNS,
        PARETO_INDICATORS,
        Combination,
        describe,
        flexibility,
        pareto_mask,
        peak_memory,
        score_rows,
        sense,
    )
    from simulator.score.indicators import INDICATOR_KEYS, app_flexibility, scenario_indicators
    from simulator.score.section import score_scenario, score_section

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
