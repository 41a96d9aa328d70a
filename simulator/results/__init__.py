"""Run results: pandas tables with documented columns, a summary, and writers."""

from simulator.results.breakdown import energy_breakdown
from simulator.results.run_result import RunResult, summarize

__all__ = ["RunResult", "energy_breakdown", "summarize"]
