"""What ``memory_series: true`` costs the engine: the logging tally against the plain one.

The workload is ``bench/engine.py``'s (MobileNetV2 int8 and ResNet-18 fp16 on the flagship
phone, ``--requests`` requests). Each round runs ``Engine(...).run()`` at trace ``full``
twice, without and with ``memory_series``, back to back, with ``gc.collect()`` before
each. Plans are compiled once, outside the timer. The script prints the best wall time of
each and the median over rounds of (with / without) within a round, which cancels slow
phases of a shared machine. docs/memory.md quotes it.

Run ``python bench/memory_series.py [--requests N] [--repeat K]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine import build_scenario  # noqa: E402

from simulator.engine import plan_apps  # noqa: E402
from simulator.engine.run import Engine  # noqa: E402
from simulator.platform import CostOracle  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    plain = build_scenario(args.requests)
    logged = dataclasses.replace(plain, memory_series=True)
    oracle = CostOracle(plain.platform)
    plans = plan_apps(plain, oracle)
    walls: dict[str, list[float]] = {"plain": [], "logged": []}
    changes = 0
    for _ in range(args.repeat):
        for name, scenario in (("plain", plain), ("logged", logged)):
            gc.collect()
            t0 = time.perf_counter()
            engine = Engine(scenario, plans, oracle, 0)
            engine.run()
            walls[name].append(time.perf_counter() - t0)
            changes = max(changes, len(engine.memory_log))
    ratios = [b / a for a, b in zip(walls["plain"], walls["logged"], strict=True)]
    print(f"requests {args.requests}, rounds {args.repeat}, memory changes logged {changes:,}")
    for name, values in walls.items():
        best_ms, median_ms = min(values) * 1e3, statistics.median(values) * 1e3
        print(f"{name:7s} best {best_ms:8.1f} ms   median {median_ms:8.1f} ms")
    print(
        f"logged / plain: {min(walls['logged']) / min(walls['plain']):.2f} (best/best), "
        f"{statistics.median(ratios):.2f} (median of per-round pairs)"
    )


if __name__ == "__main__":
    main()
