"""Analysis over result tables: read runs and sweeps back, draw figures, write reports.

This package never imports engine internals: it reads the documented columns of the
tables (``docs/results.md``). The figures live in ``analysis.sweep_plots`` and
``analysis.run_plots``, the plot kinds of ``socsim plot`` in ``analysis.kinds``, the
HTML report in ``analysis.report`` (docs/plots.md). They are not imported here, so that
reading tables does not load matplotlib.
"""

from analysis.tables import RESULT_TABLES, load_run
from simulator.results.breakdown import energy_breakdown

__all__ = ["RESULT_TABLES", "energy_breakdown", "load_run"]
