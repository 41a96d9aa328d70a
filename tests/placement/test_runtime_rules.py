"""DS3's run-time rules as pure functions of a snapshot, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from simulator.placement import POLICIES
from simulator.placement.runtime import (
    RUNTIME_RULES,
    ReadyOp,
    UnitsView,
    eft,
    etf,
    etf_lb,
    met,
    stf,
)


def view(free=(0.0, 0.0, 0.0), idle=(True, True, True), given=(0, 0, 0), now=0.0):
    return UnitsView(now, tuple(free), tuple(idle), tuple(given))


def test_every_rule_is_a_placement_policy():
    for name in RUNTIME_RULES:
        assert name in POLICIES


def test_met_takes_the_fastest_unit_whatever_its_queue():
    op = ReadyOp(0, (0, 1), (5.0, 6.0), (0.0, 0.0))
    assert met([op], view(free=(100.0, 0.0, 0.0))) == [(0, 0, 105.0)]


def test_met_ties_prefer_idle_units_then_the_fewest_given_in_the_call():
    a = ReadyOp(0, (0, 1, 2), (4.0, 4.0, 4.0), (0.0, 0.0, 0.0))
    b = ReadyOp(1, (0, 1, 2), (4.0, 4.0, 4.0), (0.0, 0.0, 0.0))
    busy0 = view(free=(3.0, 0.0, 0.0), idle=(False, True, True))
    # unit 0 is busy: a goes to unit 1 (first idle), b to unit 2 (fewest given here)
    assert [d.unit for d in met([a, b], busy0)] == [1, 2]


def test_eft_decides_in_ready_order_and_books_each_choice():
    # p: u0 8, u1 9; q: u0 3, u1 20. p first to u0 (8), then q: u0 at 8 + 3 = 11 < 20
    p = ReadyOp(0, (0, 1), (8.0, 9.0), (0.0, 0.0))
    q = ReadyOp(1, (0, 1), (3.0, 20.0), (0.0, 0.0))
    assert eft([p, q], view()) == [(0, 0, 8.0), (1, 0, 11.0)]


def test_eft_waits_for_inputs_or_the_unit_whichever_is_later():
    op = ReadyOp(0, (0, 1), (10.0, 4.0), (2.0, 30.0))
    # u0: max(2, 5) + 10 = 15; u1: max(30, 0) + 4 = 34
    assert eft([op], view(free=(5.0, 0.0, 0.0))) == [(0, 0, 15.0)]


def test_etf_takes_the_earliest_finishing_pair_first():
    p = ReadyOp(0, (0, 1), (8.0, 9.0), (0.0, 0.0))
    q = ReadyOp(1, (0, 1), (3.0, 20.0), (0.0, 0.0))
    # q on u0 finishes at 3 (earliest of all pairs); then p: u0 at 11, u1 at 9
    assert etf([p, q], view()) == [(1, 0, 3.0), (0, 1, 9.0)]


def test_etf_lb_breaks_unit_ties_by_ops_given_in_the_run():
    op = ReadyOp(0, (0, 1, 2), (10.0, 10.0, 10.0), (0.0, 0.0, 0.0))
    assert etf([op], view(given=(3, 1, 1))) == [(0, 0, 10.0)]
    assert etf_lb([op], view(given=(3, 1, 1))) == [(0, 1, 10.0)]


def test_stf_decides_shortest_first_each_on_its_fastest_unit():
    a = ReadyOp(0, (0, 1), (5.0, 100.0), (1.0, 1.0))
    b = ReadyOp(1, (0, 1), (2.0, 100.0), (1.0, 1.0))
    c = ReadyOp(2, (0, 1), (3.0, 100.0), (1.0, 1.0))
    # b (2) from 1 to 3, c (3) to 6, a (5) to 11, all on u0
    assert stf([a, b, c], view()) == [(1, 0, 3.0), (2, 0, 6.0), (0, 0, 11.0)]


@pytest.mark.parametrize("name", sorted(RUNTIME_RULES))
def test_each_op_gets_exactly_one_decision_on_one_of_its_units(name):
    ready = [
        ReadyOp(k, units, tuple(1.0 + k + u for u in units), tuple(0.5 * u for u in units))
        for k, units in enumerate([(0, 2), (1,), (0, 1, 2), (2,)])
    ]
    decisions = RUNTIME_RULES[name](ready, view(free=(1.0, 2.0, 0.0)))
    assert sorted(d.key for d in decisions) == [0, 1, 2, 3]
    for d in decisions:
        assert d.unit in ready[d.key].units and math.isfinite(d.finish_s)
