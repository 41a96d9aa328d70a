"""A full trace costs at most 64 bytes per op or transfer row (issue 17, item 3).

The memory a run holds when its tables start being built (``Ledger.op_table``, right
after the run) is measured with ``tracemalloc`` for N and 2N MobileNetV2 requests
(``bench/scale.py``'s ``held_at_tables``, which also prints the figure): the
difference divided by the difference in trace rows is what one more row costs, including
anything else that grows with the requests (their records). The rows are columns of 8-byte
floats (5 per row) plus an id, a code and a level: ~55 bytes; before the columns each row
was a tuple of boxed floats, ~193 bytes. A deterministic measurement, not a timing.
"""

from __future__ import annotations

import pandas as pd
from bench_loader import load_bench

from simulator.engine import ledger as ledger_module
from simulator.engine import simulate

scale = load_bench("scale")
build_scale_scenario = scale.build_scale_scenario
held_at_tables = scale.held_at_tables

N_REQUESTS = 20


def test_a_full_trace_row_costs_at_most_64_bytes():
    held_at_tables(5)  # first-run caches (presets, zoo model) out of the way
    held_n, rows_n = held_at_tables(N_REQUESTS)
    held_2n, rows_2n = held_at_tables(2 * N_REQUESTS)
    # 151 ops and 59 on-chip moves per request
    assert rows_2n - rows_n == N_REQUESTS * (151 + 59)
    per_row = (held_2n - held_n) / (rows_2n - rows_n)
    # at least the five 8-byte times and energies each row must keep (a measurement that
    # saw nothing would pass the bound); at most 64 bytes (measured: 54-55)
    assert 40 <= per_row <= 64, per_row


def test_the_tables_do_not_depend_on_how_rows_were_chunked(monkeypatch):
    """Rows moved into the columns 7 at a time or 1,024 at a time: the same tables."""
    scenario = build_scale_scenario(12)
    default = simulate(scenario, trace="full")
    monkeypatch.setattr(ledger_module, "CHUNK_ROWS", 7)
    small = simulate(scenario, trace="full")
    assert len(default.ops) == 12 * 151 > 1024  # more than one chunk at the default
    assert default.ops["request_id"].is_monotonic_increasing is False  # 4 requests in flight
    pd.testing.assert_frame_equal(default.ops, small.ops)
    pd.testing.assert_frame_equal(default.transfers, small.transfers)
    pd.testing.assert_frame_equal(default.power, small.power)
