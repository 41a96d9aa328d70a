"""The pure DRAM allocator: max-min fair water-filling, hand-computed and under hypothesis."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.hardware.dram import water_fill


def test_demands_within_capacity_are_met():
    assert water_fill([10.0, 20.0], 100.0) == [10.0, 20.0]


def test_two_equal_demands_over_capacity_split_it_equally():
    # 0.75 B each, 1.5 B together: B / 2 each
    assert water_fill([75.0, 75.0], 100.0) == [50.0, 50.0]


def test_a_small_demand_is_met_and_the_rest_is_split():
    # level: 10 fits under 100 / 3; the other two split 90
    assert water_fill([60.0, 10.0, 80.0], 100.0) == [45.0, 10.0, 45.0]


def test_infinite_capacity_meets_everything():
    assert water_fill([1e30, 5.0], math.inf) == [1e30, 5.0]


@pytest.mark.parametrize("capacity, demands", [(0.0, [1.0]), (1.0, [-1.0]), (1.0, [math.inf])])
def test_bad_input_is_an_error(capacity, demands):
    with pytest.raises(ValueError):
        water_fill(demands, capacity)


@given(
    st.lists(st.floats(0.0, 1e12, allow_nan=False), max_size=12),
    st.floats(1e-3, 1e12, allow_nan=False),
)
def test_allotments_are_max_min_fair_and_never_exceed_the_capacity(demands, capacity):
    out = water_fill(demands, capacity)
    assert len(out) == len(demands)
    assert sum(out) <= capacity * (1 + 1e-12) or sum(out) == sum(demands)
    for d, a in zip(demands, out, strict=True):
        assert 0.0 <= a <= d
    if sum(demands) > capacity:
        # the capacity is used up, and whoever is capped gets the most anyone gets
        assert sum(out) == pytest.approx(capacity, rel=1e-9)
        level = max(out)
        for d, a in zip(demands, out, strict=True):
            assert a == d or a == pytest.approx(level, rel=1e-12)
