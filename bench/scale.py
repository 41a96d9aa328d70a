"""Scale: one long run (default 10,000 MobileNetV2 requests ≈ 1.5 million op tasks) at each
trace level, with wall time, op tasks per second and peak memory.

Run ``python bench/scale.py`` (one command; options ``--requests N``, ``--levels``,
``--json``). Each measurement runs in a fresh child process (``python bench/scale.py
--child LEVEL N``) so that its peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``)
is its own. The child also reports the RSS after its imports and the scenario load, so
that ``peak - baseline`` is what the run itself needed.

Workload (built in code on the ``flagship_phone`` preset): MobileNetV2 int8 (151 ops)
from the phone in a closed loop of 4 requests in flight; depthwise convs on the DSP,
residual adds on the big CPU cluster, everything else on the NPU (the placement of
``bench/engine.py``'s ``vision`` app), so every request also makes on-chip transfers.

By default: ``none`` at 10,000 requests; ``full`` and ``summary`` at 2,000 requests (the
full trace of 10,000 requests would need several GiB; its growth per request is what
the table shows). Last, the bytes one more full-trace row costs (``--row-requests N``:
``tracemalloc`` after N and 2N requests, see :func:`held_at_tables`).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONCURRENCY = 4


def build_scale_scenario(n_requests: int, seed: int = 1):
    """``n_requests`` MobileNetV2 int8 requests on the flagship phone, closed loop of 4."""
    from simulator import parse_scenario

    document = {
        "name": "bench_scale",
        "seed": seed,
        "include": ["devices/flagship_phone.yaml"],
        "nodes": {"phone": {"preset": "flagship_phone"}},
        "models": {"mnv2": {"zoo": "mobilenet_v2", "dtype": "int8"}},
        "workload": [
            {
                "app": "vision",
                "model": "mnv2",
                "source": "phone",
                "arrival": {"process": "closed_loop", "concurrency": CONCURRENCY},
                "count": n_requests,
                "placement": {
                    "policy": "manual",
                    "rules": [
                        {"kind": "dwconv", "unit": "dsp"},
                        {"kind": "elementwise", "unit": "cpu_big"},
                    ],
                    "default": "npu",
                },
            }
        ],
    }
    return parse_scenario(document, base_dir=ROOT / "scenarios", source="<bench/scale.py>")


def held_at_tables(n_requests: int) -> tuple[int, int]:
    """(bytes traced when the run ends, trace rows) of one full-trace run of ``n_requests``.

    Measured by ``tracemalloc`` when ``simulate()`` starts building its tables (the first
    ``Ledger.op_table`` call, right after the run), with the buffered rows flushed into
    the columns: everything the run holds then, the trace and the request records.
    """
    import gc
    import tracemalloc

    from simulator import simulate
    from simulator.engine.ledger import Ledger

    seen = []
    op_table = Ledger.op_table

    def measured(ledger):
        ledger.flush()
        gc.collect()
        seen.append((tracemalloc.get_traced_memory()[0], ledger.trace_rows()))
        return op_table(ledger)

    scenario = build_scale_scenario(n_requests)
    gc.collect()
    Ledger.op_table = measured
    tracemalloc.start()
    try:
        result = simulate(scenario, trace="full")
    finally:
        tracemalloc.stop()
        Ledger.op_table = op_table
    held, rows = seen[0]
    if rows != len(result.ops) + len(result.transfers):
        raise RuntimeError(
            f"{rows} trace rows held, {len(result.ops)} + {len(result.transfers)} in the tables"
        )
    return held, rows


def trace_bytes_per_row(n_requests: int) -> float:
    """What one more full-trace row costs: held memory of 2N vs N requests per added row."""
    held_at_tables(5)  # first-run caches (presets, the zoo model) out of the way
    held_n, rows_n = held_at_tables(n_requests)
    held_2n, rows_2n = held_at_tables(2 * n_requests)
    return (held_2n - held_n) / (rows_2n - rows_n)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(level: str, n_requests: int) -> dict:
    """One measured run in this process: returns its figures."""
    import gc

    from simulator import simulate

    scenario = build_scale_scenario(n_requests)
    ops_per_request = len(scenario.models["mnv2"])
    gc.collect()
    baseline = _rss_mib()
    start = time.perf_counter()
    result = simulate(scenario, trace=level)
    wall = time.perf_counter() - start
    peak = _rss_mib()
    summary = result.summary
    op_tasks = n_requests * ops_per_request
    return {
        "level": level,
        "requests": n_requests,
        "op_tasks": op_tasks,
        "completed": int(summary["completed"]),
        "wall_s": round(wall, 2),
        "ops_per_s": round(op_tasks / wall),
        "baseline_rss_mib": round(baseline, 1),
        "peak_rss_mib": round(peak, 1),
        "run_mib": round(peak - baseline, 1),
        "latency_p50_ms": round(summary["latency_p50_s"] * 1e3, 4),
        "energy_j": round(summary["energy_j"], 6),
        "op_rows": len(result.ops),
    }


def measure(level: str, n_requests: int) -> dict:
    """Run :func:`child` in a fresh interpreter (its own peak RSS)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", level, str(n_requests)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000, help="trace-none run size")
    parser.add_argument(
        "--compare-requests",
        type=int,
        default=2_000,
        help="size of the full/summary runs (and of a second none run, for growth)",
    )
    parser.add_argument(
        "--row-requests",
        type=int,
        default=100,
        help="N of the bytes-per-trace-row measurement (N vs 2N requests)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("LEVEL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return 0
    runs = [
        measure("full", args.compare_requests),
        measure("summary", args.compare_requests),
        measure("none", args.compare_requests),
        measure("none", args.requests),
    ]
    print(f"scale benchmark (python {sys.version.split()[0]}): MobileNetV2 int8, closed loop")
    header = f"{'trace':<8}{'requests':>9}{'op tasks':>11}{'wall s':>9}{'ops/s':>10}"
    print(header + f"{'peak RSS MiB':>14}{'run MiB':>9}{'op rows':>10}")
    for r in runs:
        print(
            f"{r['level']:<8}{r['requests']:>9,}{r['op_tasks']:>11,}{r['wall_s']:>9.2f}"
            f"{r['ops_per_s']:>10,}{r['peak_rss_mib']:>14.1f}{r['run_mib']:>9.1f}"
            f"{r['op_rows']:>10,}"
        )
    small, big = runs[2], runs[3]
    same = small["latency_p50_ms"] == runs[0]["latency_p50_ms"] == runs[1]["latency_p50_ms"]
    print(f"aggregates equal across levels at {small['requests']:,} requests: {same}")
    growth = (big["run_mib"] - small["run_mib"]) / (big["requests"] - small["requests"]) * 1e3
    full_growth = runs[0]["run_mib"] / runs[0]["requests"] * 1e3
    print(
        f"memory per 1,000 requests: none {growth:.2f} MiB (between the two none runs), "
        f"full {full_growth:.1f} MiB"
    )
    per_row = trace_bytes_per_row(args.row_requests)
    print(
        f"full trace: {per_row:.1f} bytes per op/transfer row held after the run "
        f"(tracemalloc, {args.row_requests:,} vs {2 * args.row_requests:,} requests)"
    )
    if args.json:
        print(json.dumps({"bench": "scale", "runs": runs, "trace_bytes_per_row": per_row}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
