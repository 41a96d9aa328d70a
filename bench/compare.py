"""Compare a bench script's ratios with ``bench/baseline.json``; print those > 10 % worse.

Run ``python bench/engine.py --json | python bench/compare.py engine`` (any bench that
prints one JSON line with ``--json``). tests/test_bench_smoke.py runs the bench scripts
in smoke mode and prints these lines in CI's output; it never fails on them (timings are
not assertions on a shared machine).

``bench/baseline.json`` maps a bench name to its figures, each
``{"value": ..., "smoke": ..., "better": "higher" | "lower", "source": ...}``; a figure's
key is a dotted path into the bench's JSON line (``predictor.engine_ratio_paired_median``).
``value`` is the figure quoted in docs/performance.md (full-size run); ``smoke`` (optional)
the same ratio measured with the smoke test's arguments, which smoke runs are compared
with (small workloads give other ratios: 4 requests spend most of ``simulate()`` on fixed
table costs). After re-measuring, edit both here. A line printed in CI is a prompt to run
the full bench, not a verdict: one smoke round on a shared machine varies by ±30 %.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BASELINE = Path(__file__).resolve().parent / "baseline.json"
#: A figure this much worse than its baseline is printed.
TOLERANCE = 0.10


def load_baseline(path: Path = BASELINE) -> dict[str, dict[str, dict[str, Any]]]:
    """The baseline figures by bench name (keys starting with ``_`` are notes)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: figures for name, figures in data.items() if not name.startswith("_")}


def last_json(output: str) -> dict[str, Any] | None:
    """The last line of ``output`` that is a JSON object (a bench's ``--json`` line)."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def lookup(record: Mapping[str, Any], dotted: str) -> float | None:
    """``record``'s number at the dotted path, or None if there is none."""
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def regressions(
    bench: str,
    record: Mapping[str, Any] | None,
    baseline: Mapping[str, Mapping] | None = None,
    smoke: bool = False,
) -> list[str]:
    """One line per baseline figure of ``bench`` that ``record`` misses or is > 10 % worse on.

    Parameters
    ----------
    bench : str
        The bench's name in the baseline (``engine``, ``loader``...).
    record : mapping or None
        The bench's JSON line (None: it printed none).
    baseline : mapping, optional
        The baseline by bench name (default: ``bench/baseline.json``).
    smoke : bool
        The record is a smoke run: compare with each figure's ``smoke`` value where the
        baseline has one.
    """
    figures = (load_baseline() if baseline is None else baseline).get(bench, {})
    if figures and record is None:
        return [f"bench {bench}: no JSON line to compare with bench/baseline.json"]
    lines = []
    for key, figure in figures.items():
        value = lookup(record, key)
        base = float(figure["smoke"] if smoke and "smoke" in figure else figure["value"])
        better = figure.get("better", "higher")
        if value is None:
            lines.append(f"bench {bench}: {key} is not in its JSON line (baseline {base:g})")
            continue
        worse = (
            value < base * (1 - TOLERANCE) if better == "higher" else value > base * (1 + TOLERANCE)
        )
        if worse:
            change = abs(value / base - 1) * 100 if base else float("inf")
            lines.append(
                f"bench {bench}: {key} = {value:.3g}, {change:.0f} % worse than the baseline "
                f"{base:g} ({better} is better)"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    """``compare.py BENCH [FILE]``: read the bench's output (stdin by default), print lines."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__.splitlines()[0])
        print("usage: python bench/compare.py BENCH [OUTPUT_FILE]   (output on stdin by default)")
        return 2
    text = Path(args[1]).read_text() if len(args) > 1 else sys.stdin.read()
    record = last_json(text)
    lines = regressions(args[0], record, smoke=bool(record and record.get("smoke")))
    for line in lines:
        print(line)
    if not lines:
        print(f"bench {args[0]}: every baseline figure within {TOLERANCE:.0%} (or better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
