"""Analysis over result tables: read runs and sweeps back, draw figures, write reports.

This package never imports engine internals: it reads the documented columns of the
tables (``docs/results.md``). The figures live in ``analysis.sweep_plots`` and
``analysis.run_plots``, the plot kinds of ``socsim plot`` in ``analysis.kinds``, the
HTML report in ``analysis.report`` (docs/plots.md). They are not imported here, so that
reading tables does not load matplotlib; the names below are imported on first use
(:mod:`simulator.lazy`), so that ``socsim --help`` does not load pandas.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the re-exports, listed in __all__)

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.lazy import lazy_exports

_EXPORTS = {
    "RESULT_TABLES": "analysis.tables",
    "energy_breakdown": "simulator.results.breakdown",
    "load_run": "analysis.tables",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from analysis.tables import RESULT_TABLES, load_run
    from simulator.results.breakdown import energy_breakdown

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
