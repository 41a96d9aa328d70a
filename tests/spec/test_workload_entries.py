"""Workload entries and the arrival processes they name (simulator.workload)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from simulator.errors import SocsimError
from simulator.workload import ARRIVALS, AfterCompletion, WorkloadEntry


def first(stream, n):
    return list(itertools.islice(stream, n))


def entry(arrival: str, **options) -> WorkloadEntry:
    return WorkloadEntry("app", "m", "phone", arrival, options, count=5)


def test_registry_names():
    assert list(ARRIVALS) == ["periodic", "poisson", "closed_loop", "trace"]
    with pytest.raises(
        SocsimError, match=r"unknown arrival process 'poison' \(did you mean 'poisson'"
    ):
        ARRIVALS.get("poison")


def test_periodic_by_period_and_by_rate():
    rng = np.random.default_rng(0)
    assert first(entry("periodic", period_s=0.25, offset_s=0.1).arrivals(rng), 3) == [
        0.1,
        0.35,
        0.6,
    ]
    assert first(entry("periodic", rate_hz=4.0, offset_s=0.0).arrivals(rng), 3) == [0.0, 0.25, 0.5]


def test_poisson_is_seeded_and_has_the_right_mean():
    e = entry("poisson", rate_hz=50.0, offset_s=1.0)
    a = first(e.arrivals(np.random.default_rng(42)), 4000)
    b = first(e.arrivals(np.random.default_rng(42)), 4000)
    assert a == b
    assert a[0] > 1.0
    assert all(y >= x for x, y in itertools.pairwise(a))
    gaps = np.diff([1.0, *a])
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.05)


def test_closed_loop_tokens():
    e = entry("closed_loop", concurrency=2, think_s=0.01)
    assert first(e.arrivals(None), 4) == [
        0.0,
        0.0,
        AfterCompletion(0.01),
        AfterCompletion(0.01),
    ]


def test_trace_yields_its_times():
    e = WorkloadEntry("app", "m", "phone", "trace", {"times_s": [0.0, 0.5, 0.5]})
    assert list(e.arrivals(None)) == [0.0, 0.5, 0.5]


def test_trace_times_from_yaml(spec):
    text = spec.edit(
        spec.BASE, "process: periodic, period_ms: 100", "process: trace, times_ms: [0, 5, 2]"
    )
    p = spec.problem(text)
    assert p.path == "workload[0].arrival.times_ms[2]"
    assert p.message == "values must not decrease"


def test_closed_loop_from_yaml(spec):
    text = spec.edit(
        spec.BASE, "process: periodic, period_ms: 100", "process: closed_loop, think_ms: 5"
    )
    e = spec.load(text).workload[0]
    assert (e.arrival, dict(e.arrival_options)) == (
        "closed_loop",
        {"concurrency": 1, "think_s": 0.005},
    )


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"arrival": "poison"}, "unknown arrival process 'poison'"),
        ({"count": None}, "give count or duration_s"),
        ({"count": 0}, "count must be >= 1"),
        ({"duration_s": 0.0}, "duration_s must be > 0"),
        ({"duration_s": float("inf")}, "duration_s must be > 0"),
    ],
)
def test_entry_rejects(kwargs, needle):
    fields = {"app": "a", "model": "m", "source": "s", "arrival": "periodic", "count": 1}
    fields.update(kwargs)
    with pytest.raises(SocsimError, match=needle):
        WorkloadEntry(arrival_options={"rate_hz": 1.0, "offset_s": 0.0}, **fields)


def test_trace_needs_no_bound():
    e = WorkloadEntry("a", "m", "s", "trace", {"times_s": [1.0]})
    assert e.count is None and e.duration_s is None


def test_placement_for(spec):
    text = spec.edit(
        spec.BASE,
        "    deadline_ms: 400\n",
        "    deadline_ms: 400\n    placement: {policy: single, unit: gpu}\n",
    )
    s = spec.load(text)
    assert s.placement_for(s.workload[0]).options["unit"] == "gpu"
    s = spec.load(spec.BASE)
    assert s.placement_for(s.workload[0]) is s.placement
    assert s.placement.name == "single"
