"""pareto_front: hand examples and the dominance property."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from analysis.pareto import pareto_front


def test_hand_example_with_ties_and_nan():
    x = [1, 2, 3, 2, 4, math.nan, 5, 1]
    y = [5, 3, 4, 3, 1, 0, 1, 6]
    # (3,4) is dominated by (2,3); (5,1) by (4,1); (1,6) by (1,5); the two (2,3) tie
    # and both stay; the NaN point is never on the front
    expected = [True, True, False, True, True, False, False, False]
    assert pareto_front(x, y).tolist() == expected


def test_empty_and_single():
    assert pareto_front([], []).tolist() == []
    assert pareto_front([3.0], [2.0]).tolist() == [True]


def _dominates(a, b):
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


# a few distinct values make ties and equal points common
values = st.sampled_from([0.0, 1.0, 1.5, 2.0, 3.0, 10.0, math.nan])


@given(st.lists(st.tuples(values, values), max_size=30))
def test_front_is_undominated_and_everything_else_is_dominated(points):
    x = [p[0] for p in points]
    y = [p[1] for p in points]
    front = pareto_front(x, y)
    finite = [i for i, p in enumerate(points) if not np.isnan(p).any()]
    for i in finite:
        dominated = any(_dominates(points[j], points[i]) for j in finite if j != i)
        assert front[i] == (not dominated), (points[i], front[i])
    assert not any(front[i] for i in range(len(points)) if i not in finite)
