"""The DVFS state asks a windowed governor only where its answer can change.

A built-in governor's rule never picks a lower level for a higher utilisation (same
current level and cap), so the utilisations for which it keeps the current level form
an interval; :class:`~simulator.hardware.dvfs_state.DvfsState` finds it once per level by
asking the rule and decides inside it without asking. The levels must be those of asking
the rule at every op start, bit for bit.
"""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.hardware import dvfs_state
from simulator.hardware.dvfs import DvfsTable, OperatingPoint
from simulator.hardware.dvfs_state import SPAN_AFTER, SPAN_STEPS, DvfsState
from simulator.hardware.governors import (
    GOVERNORS,
    governor_options,
    governor_rule,
    rule_is_monotone,
)
from simulator.hardware.units import ComputeUnit

WINDOWED = ("ondemand", "schedutil")


@st.composite
def tables(draw) -> DvfsTable:
    steps = draw(st.lists(st.floats(0.05, 1.0), min_size=1, max_size=8))
    frequencies_hz, voltages = [], []
    f_ghz, v = draw(st.floats(0.1, 1.0)), 0.5
    for step in steps:
        frequencies_hz.append(f_ghz * 1e9)
        voltages.append(v)
        f_ghz += step
        v += step / 10
    points = tuple(OperatingPoint(f, v) for f, v in zip(frequencies_hz, voltages, strict=True))
    return DvfsTable(points, 1e-9, static_w=0.1, idle_w=0.05)


@st.composite
def options(draw, name: str) -> dict:
    raw = {"window_ms": draw(st.sampled_from([0.5, 2.0, 10.0]))}
    if name == "ondemand":
        raw["up_threshold"] = draw(st.sampled_from([0.3, 0.8, 0.95, 1.0]))
    else:
        raw["headroom"] = draw(st.sampled_from([1.0, 1.25, 2.0]))
    return governor_options(name, raw)


def test_only_built_in_rules_are_trusted_to_be_monotone():
    assert all(rule_is_monotone(name) for name in ("performance", "powersave", "fixed"))
    assert all(rule_is_monotone(name) for name in WINDOWED)
    assert not rule_is_monotone("a_plugin_governor")
    assert set(GOVERNORS) >= {"performance", "powersave", "fixed", *WINDOWED}


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(WINDOWED).flatmap(lambda n: st.tuples(st.just(n), tables(), options(n))),
    st.integers(0, 8),
    st.one_of(st.none(), st.integers(0, 8)),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_a_higher_utilisation_never_picks_a_lower_level(governor, current, cap, u, v):
    name, table, opts = governor
    rule = governor_rule(name, table, opts)
    current = min(current, table.top)
    low, high = min(u, v), max(u, v)
    assert rule(low, current, cap) <= rule(high, current, cap)


class Counted:
    """A rule that counts how often it is asked."""

    def __init__(self, rule):
        self.rule, self.calls = rule, 0

    def __call__(self, utilisation, current, cap):
        self.calls += 1
        return self.rule(utilisation, current, cap)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(WINDOWED).flatmap(lambda n: st.tuples(st.just(n), tables(), options(n))),
    st.sampled_from([(1, None), (4, 2)]),  # (cores, cores per op): 1 or 2 slots
    st.lists(
        st.tuples(
            st.floats(0.0, 3e-3),  # idle gap before the op (s)
            st.floats(1e-6, 4e-3),  # its compute time at the top level (s)
            st.one_of(st.none(), st.integers(0, 8)),  # the thermal cap from then on
        ),
        min_size=1,
        max_size=120,
    ),
    st.sampled_from([1, 2, SPAN_AFTER]),
)
def test_levels_are_those_of_asking_at_every_start(governor, cores, ops, span_after):
    """(A span after 1 or 2 kept decisions too: many spans, found at many utilisations.)"""
    with patch.object(dvfs_state, "SPAN_AFTER", span_after):
        check_levels(governor, cores, ops)


def check_levels(governor, cores, ops):
    name, table, opts = governor
    cores, cores_per_op = cores
    unit = ComputeUnit(
        "cpu",
        "cpu",
        {"fp32": 1e9},
        cores=cores,
        cores_per_op=cores_per_op,
        dvfs=table,
        governor=name,
        governor_options=opts,
    )
    spans, asking = DvfsState(unit), DvfsState(unit)
    asking._keeps = None  # the rule asked at every start, as before spans
    now, busy_until = 0.0, 0.0
    for gap_s, compute_s, cap in ops:
        # one slot: an op starts once the previous ended; two: whenever (they overlap)
        now = (busy_until if unit.slots == 1 else now) + gap_s
        spans.cap = asking.cap = cap
        times_s, _ = spans.op_costs(1e-6, compute_s, 0.0, 1.0)
        level = spans.start(now, times_s)
        assert level == asking.start(now, times_s)
        busy_until = now + times_s[level]
    assert spans.changes == asking.changes
    assert spans.level == asking.level
    # each span found keeps its level at both ends and is within 2**-20 of the true one
    rule = spans._rule
    for level, span in enumerate(spans._keeps):
        if span is not None:
            low, high = span
            assert rule(low, level, None) == rule(high, level, None) == level
            assert low == 0.0 or rule(max(low - 2**-19, 0.0), level, None) != level
            assert high == 1.0 or rule(min(high + 2**-19, 1.0), level, None) != level


def schedutil_state() -> DvfsState:
    """A fresh state of a one-slot schedutil CPU at 0.5, 1 and 2 GHz (10 ms window)."""
    table = DvfsTable(tuple(OperatingPoint(f * 1e9, 0.6 + f / 10) for f in (0.5, 1, 2)), 1e-9)
    unit = ComputeUnit(
        "cpu",
        "cpu",
        {"fp32": 1e9},
        dvfs=table,
        governor="schedutil",
        governor_options=governor_options("schedutil", {}),
    )
    return DvfsState(unit)


def test_a_short_run_asks_as_without_spans():
    """An estimate's replay of a few ops: each start asks the rule once, no span."""
    state = schedutil_state()
    counted = state._rule = Counted(state._rule)
    for k in range(SPAN_AFTER):
        state.start(k * 4e-3, (1e-3, 0.5e-3, 0.25e-3))
    assert counted.calls == SPAN_AFTER
    assert state._keeps == [None, None, None]


def test_a_lightly_loaded_unit_is_asked_once_per_level():
    """schedutil at level 0 keeps 0 up to about 80 % load: one span, then no questions."""
    state = schedutil_state()
    state.level = 0
    counted = state._rule = Counted(state._rule)
    times_s = (1e-3, 0.5e-3, 0.25e-3)
    for k in range(100):  # 1 ms busy every 4 ms: 25 % load
        assert state.start(k * 4e-3, times_s) == 0
    low, high = state._keeps[0]
    assert low == 0.0 and 0.79 < high <= 0.8
    # asked at the first SPAN_AFTER starts, then for the span, then never
    asked_for_span = counted.calls - SPAN_AFTER
    assert 0 < asked_for_span <= 2 * SPAN_STEPS + 2
