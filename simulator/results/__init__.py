"""Run results: pandas tables with documented columns, a summary, and writers."""

from simulator.results.run_result import RunResult, summarize

__all__ = ["RunResult", "summarize"]
