"""The cells docs/plots.md quotes from the Neurosurgeon decision map, rerun."""

from __future__ import annotations

import pytest

from analysis.neurosurgeon_map import BANDWIDTH, LATENCY, REVERSE, SCENARIO, run_grid
from analysis.sweep_plots import decision_map

# (Mbit/s, one-way ms) -> (decision, mean latency in ms, device mJ per inference)
QUOTED = {
    (120, 1): ("split@pool5", 14.36, 66.0),
    (150, 1): ("split@pool5", 13.82, 63.1),
    (200, 1): ("split@pool1", 11.28, 58.4),
    (5000, 1): ("cloud", 3.65, None),
    (5000, 35): ("device", 14.66, 73.6),
}


def test_quoted_cells_of_the_decision_map():
    grid = {BANDWIDTH: (120, 150, 200, 5000), LATENCY: (1, 35)}
    table = run_grid(SCENARIO, grid, tied={REVERSE: BANDWIDTH})
    assert (table["status"] == "ok").all()
    for (mbps, ms), (decision, latency_ms, energy_mj) in QUOTED.items():
        row = table[(table[BANDWIDTH] == mbps) & (table[LATENCY] == ms)].iloc[0]
        assert row["decision"] == decision
        assert row["latency_mean_s"] * 1e3 == pytest.approx(latency_ms, abs=0.005)
        if energy_mj is not None:
            assert row["device_energy_per_inference_j"] * 1e3 == pytest.approx(energy_mj, abs=0.05)
    # no cut beats the phone at 35 ms one way, whatever the bandwidth
    assert set(table[table[LATENCY] == 35]["decision"]) == {"device"}
    legend = [t.get_text() for t in decision_map(table, BANDWIDTH, LATENCY).legends[0].texts]
    # first appearance scanning bandwidth, then latency
    assert legend == ["split@pool5", "device", "split@pool1", "cloud"]
