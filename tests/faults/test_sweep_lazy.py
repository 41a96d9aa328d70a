"""Points are made lazily: preparing a sweep validates each swept value, not each point,
and executors keep a bounded number of batches in flight (memory follows the queue)."""

from __future__ import annotations

import pytest
from faults.sweep_helpers import BANDWIDTH, small_sweep

import simulator.sweep.points as points_module
from simulator.sweep import prepare_sweep
from simulator.sweep.executors import bounded
from simulator.sweep.runner import Batches


def test_a_million_point_sweep_is_prepared_from_its_values_not_its_points(tmp_path, monkeypatch):
    path = small_sweep(tmp_path)
    calls = []
    real = points_module.parse_scenario

    def counted(*args, **kwargs):
        calls.append(1)
        if len(calls) > 100:  # making every point up front would go on for hours
            raise AssertionError("points are being made up front")
        return real(*args, **kwargs)

    monkeypatch.setattr(points_module, "parse_scenario", counted)
    parameters = {
        BANDWIDTH: {"start": 1, "stop": 1000},
        "links.uplink.latency_ms": {"start": 0.1, "stop": 50, "log": True},
    }
    prepared = prepare_sweep(
        path, parameters, design="random", samples=500_000, replicates=2, executor="serial"
    )
    assert len(calls) == 4  # each continuous range at its two bounds
    tasks = prepared.tasks
    assert len(tasks) == 1_000_000 and len(calls) == 4
    last = tasks[999_999]
    assert (last.point, last.replicate) == (499_999, 1)
    assert last.values == prepared.points[499_999] and 1 <= last.values[BANDWIDTH] <= 1000
    assert last.resolve().seed == prepared.seeds[499_999] and len(calls) == 5


def test_a_long_range_is_checked_at_its_ends_and_end_steps(tmp_path):
    path = small_sweep(tmp_path)
    # 5,000 values; a bad one (-1) among them is found at the start of the range
    parameters = {"links.uplink.latency_ms": {"start": -1, "stop": 4998, "step": 1}}
    with pytest.raises(Exception, match=r"sweep value links.uplink.latency_ms=-1 \(point 0\)"):
        prepare_sweep(path, parameters, executor="serial")


def test_executors_keep_a_bounded_number_of_batches_in_flight():
    submitted, collected, widest = [], [], []

    def submit(batch):
        submitted.append(batch)
        widest.append(len(submitted) - len(collected))
        return batch

    def first(running):
        done = min(running)
        collected.append(done)
        return {done}, running - {done}

    out = list(bounded(submit, iter(range(100)), 4, first))
    assert sorted(out) == list(range(100)) and max(widest) == 4


def test_remote_workers_get_points_resolved_here_and_local_ones_resolve_them(tmp_path):
    prepared = prepare_sweep(small_sweep(tmp_path))
    here = [t for batch in Batches(prepared.tasks, frozenset({(0, 0)}), 3, True) for t in batch]
    assert [(t.point, t.replicate) for t in here] == [(0, 1)] + [
        (p, r) for p in range(1, 4) for r in range(2)
    ]
    assert all(t.scenario is not None and t.resolver is None for t in here)
    there = next(iter(Batches(prepared.tasks, frozenset(), 3)))
    assert all(t.scenario is None for t in there)
    made = there[0].resolve()  # in the worker: the same scenario
    assert (made.seed, made.document) == (here[0].scenario.seed, here[0].scenario.document)
