"""Cost of one DVFS decision's busy time against the number of ops in the window.

Run ``python bench/dvfs_window.py`` (options ``--decisions K``, ``--json``).

One unit, one slot, a 10 ms governor window (the default of ``ondemand`` and
``schedutil``). The window is pre-filled with N back-to-back ops of 10 ms / N each, then
K more ops run back to back; before each, the busy time of the window is asked, as the
engine does at every op start. Two ways, timed separately (``time.perf_counter``, best of
3):

* ``loop``: the previous ``DvfsState.decide`` (before 2026-12-03): drop the intervals
  ending before the window from the front of a deque, then a left-to-right float sum of
  every clipped interval still in it, O(N) per decision;
* ``exact``: :class:`simulator.hardware.busy_window.BusyWindow`, exact integer running totals,
  O(1) amortised.

It also counts the decisions at which the two busy times differ (the loop's float sum
rounds at every addition; ``exact`` rounds once) and the largest relative difference.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.hardware.busy_window import BusyWindow

WINDOW_S = 0.01


class LoopWindow:
    """The busy time as ``DvfsState.decide`` summed it before 2026-12-03."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        self.recent: deque[tuple[float, float]] = deque()

    def record(self, start_s: float, end_s: float) -> None:
        self.recent.append((start_s, end_s))

    def busy_s(self, now: float) -> float:
        start = now - self.window_s
        while self.recent and self.recent[0][1] <= start:
            self.recent.popleft()
        busy = 0.0
        for a, b in self.recent:
            high = b if b < now else now
            low = a if a > start else start
            if high > low:
                busy += high - low
        return busy


def run(window, n_in_window: int, decisions: int) -> tuple[float, list[float]]:
    """Wall seconds of ``decisions`` decide+record cycles, and the busy times seen."""
    op_s = WINDOW_S / n_in_window
    now = 0.0
    for _ in range(n_in_window):  # pre-fill: the window holds n_in_window ops
        window.record(now, now + op_s)
        now += op_s
    seen = []
    t0 = time.perf_counter()
    for _ in range(decisions):
        seen.append(window.busy_s(now))
        window.record(now, now + op_s)
        now += op_s
    return time.perf_counter() - t0, seen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    print(
        f"busy time per decision, {WINDOW_S * 1e3:g} ms window, best of 3 "
        f"(python {sys.version.split()[0]})"
    )
    print(
        f"{'ops in window':>14} {'loop µs':>9} {'exact µs':>9} {'speed-up':>9} "
        f"{'differ':>7} {'max rel diff':>13}"
    )
    for n in (10, 100, 1000, 10000):
        loop_s = min(run(LoopWindow(WINDOW_S), n, args.decisions)[0] for _ in range(3))
        exact_s = min(run(BusyWindow(WINDOW_S), n, args.decisions)[0] for _ in range(3))
        _, loop_seen = run(LoopWindow(WINDOW_S), n, args.decisions)
        _, exact_seen = run(BusyWindow(WINDOW_S), n, args.decisions)
        pairs = list(zip(loop_seen, exact_seen, strict=True))
        differ = sum(a != b for a, b in pairs)
        rel = max((abs(a - b) / b for a, b in pairs if b), default=0.0)
        row = {
            "ops_in_window": n,
            "loop_us": loop_s / args.decisions * 1e6,
            "exact_us": exact_s / args.decisions * 1e6,
            "differ": differ,
            "max_rel_diff": rel,
        }
        rows.append(row)
        print(
            f"{n:>14,} {row['loop_us']:>9.2f} {row['exact_us']:>9.2f} "
            f"{row['loop_us'] / row['exact_us']:>8.1f}x {differ:>7} {rel:>13.2e}"
        )
    print(f"({args.decisions} decisions per row; 'differ': decisions whose busy times differ)")
    if args.json:
        print(json.dumps({"bench": "dvfs_window", "decisions": args.decisions, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
