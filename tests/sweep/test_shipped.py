"""The shipped Neurosurgeon decision map has the published shape."""

from __future__ import annotations

import dataclasses
import itertools

from simulator.sweep import prepare_sweep, run_task

MAP = "scenarios/sweeps/neurosurgeon_map.yaml"
BANDWIDTH, LATENCY = "links.uplink.bandwidth_mbps", "links.uplink.latency_ms"


def winners(prepared, latency_ms: float) -> list[str]:
    """Decisions along one RTT row, by increasing bandwidth, runs collapsed (fast path)."""
    tasks = sorted(
        (t for t in prepared.tasks if t.values[LATENCY] == latency_ms),
        key=lambda t: t.values[BANDWIDTH],
    )
    decisions = [run_task(dataclasses.replace(t, fast=True))["decision"] for t in tasks]
    assert len(decisions) == 19
    return [name for name, _ in itertools.groupby(decisions)]


def test_the_map_moves_from_the_phone_through_splits_to_the_cloud():
    prepared = prepare_sweep(MAP)
    assert len(prepared.points) == 19 * 8 and prepared.spec.replicates == 1
    # short round trip: Neurosurgeon's sequence, the cut moving towards the input
    assert winners(prepared, 1) == ["device", "split@pool5", "split@pool1", "cloud"]
    # a longer one closes the pool5 window; at 20 ms RTT nothing beats the phone
    assert winners(prepared, 3) == ["device", "split@pool1", "cloud"]
    assert winners(prepared, 10) == ["device"]
