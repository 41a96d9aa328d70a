"""Analysis over result tables: read what ``socsim run`` wrote; plots come with issue #6.

This package never imports engine internals: it reads the documented columns of the
tables (``docs/results.md``).
"""

from analysis.tables import RESULT_TABLES, load_run
from simulator.results.breakdown import energy_breakdown

__all__ = ["RESULT_TABLES", "energy_breakdown", "load_run"]
