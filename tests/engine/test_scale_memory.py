"""Under ``trace="none"`` memory does not grow with the op tasks of a run: doubling the
requests of a MobileNetV2 run adds a small fixed amount per request (the engine's
request records), not the ~150 trace rows per request a full trace keeps."""

from __future__ import annotations

import gc
import tracemalloc

from bench_loader import load_bench

from simulator.engine import simulate

build_scale_scenario = load_bench("scale").build_scale_scenario

N_REQUESTS = 150


def _traced_peak_bytes(n_requests: int, trace: str) -> tuple[int, dict]:
    scenario = build_scale_scenario(n_requests)
    gc.collect()
    tracemalloc.start()
    try:
        result = simulate(scenario, trace=trace)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, result.summary


def test_memory_growth_under_trace_none_is_per_request_and_small():
    none_n, _ = _traced_peak_bytes(N_REQUESTS, "none")
    none_2n, summary_2n = _traced_peak_bytes(2 * N_REQUESTS, "none")
    full_n, _ = _traced_peak_bytes(N_REQUESTS, "full")
    full_2n, full_summary = _traced_peak_bytes(2 * N_REQUESTS, "full")
    assert summary_2n["completed"] == 2 * N_REQUESTS == full_summary["completed"]
    assert summary_2n["energy_j"] == full_summary["energy_j"]
    ops_per_request = len(build_scale_scenario(1).models["mnv2"])
    assert ops_per_request == 151
    growth_none = (none_2n - none_n) / N_REQUESTS  # bytes per added request
    growth_full = (full_2n - full_n) / N_REQUESTS
    # a full trace keeps ~151 op rows and ~100 transfer rows per request (tens of KiB)
    assert growth_full > 20_000
    # trace none: the request record and its result row while the summary is built,
    # below 4 KiB per request (< 27 bytes per op task), and < 5 % of the full trace's
    assert growth_none < 4096, growth_none
    assert growth_none < 0.05 * growth_full, (growth_none, growth_full)
