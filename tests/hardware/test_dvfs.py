"""DVFS power/time model and governors against hand-computed numbers."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ScenarioError, SocsimError
from simulator.hardware.dvfs import DvfsTable, OperatingPoint, fit_capacitance
from simulator.hardware.governors import (
    GOVERNORS,
    GovernorInput,
    allowed_top,
    choose_level,
    demand_hz,
    governor_options,
)

EXACT = 1e-12


def three_points(static_w: float = 0.1, idle_w: float = 0.05) -> DvfsTable:
    """1 / 1.5 / 2 GHz at 0.8 / 0.9 / 1.0 V, C = 1 nF.

    Dynamic power C f V²: 1e-9 x 1e9 x 0.64 = 0.64 W; 1e-9 x 1.5e9 x 0.81 = 1.215 W;
    1e-9 x 2e9 x 1 = 2 W.
    """
    points = (OperatingPoint(1e9, 0.8), OperatingPoint(1.5e9, 0.9), OperatingPoint(2e9, 1.0))
    return DvfsTable(points, 1e-9, static_w=static_w, idle_w=idle_w)


def four_levels() -> DvfsTable:
    """0.5 / 1.0 / 1.5 / 2.0 GHz, for the governor tests."""
    volts = (0.6, 0.75, 0.9, 1.0)
    points = tuple(
        OperatingPoint(f * 1e9, v) for f, v in zip((0.5, 1.0, 1.5, 2.0), volts, strict=True)
    )
    return DvfsTable(points, 1e-9, static_w=0.1, idle_w=0.02)


# -- table --------------------------------------------------------------------------------
def test_power_at_each_level():
    table = three_points()
    assert table.top == 2
    assert table.f_max_hz == 2e9
    assert [table.dynamic_power_w(lv) for lv in range(3)] == pytest.approx(
        [0.64, 1.215, 2.0], rel=EXACT
    )
    assert [table.active_power_w(lv) for lv in range(3)] == pytest.approx(
        [0.74, 1.315, 2.1], rel=EXACT
    )
    assert table.busy_increment_w(2) == pytest.approx(2.05, rel=EXACT)


def test_fit_capacitance_matches_the_top_point():
    # C = (2.1 - 0.1) / (2e9 x 1.0²) = 1e-9 F
    assert fit_capacitance(2e9, 1.0, 2.1, 0.1) == pytest.approx(1e-9, rel=EXACT)
    # a preset's active_w stays the power at the top point
    points = (OperatingPoint(1.0e9, 0.7), OperatingPoint(3.3e9, 1.05))
    table = DvfsTable.fitted(points, active_w_at_top=4.2, static_w=0.3, idle_w=0.05)
    assert table.active_power_w(table.top) == pytest.approx(4.2, rel=EXACT)
    # C = 3.9 / (3.3e9 x 1.1025); low point: 0.3 + C x 1e9 x 0.49
    c = 3.9 / (3.3e9 * 1.05**2)
    assert table.switched_capacitance_f == pytest.approx(c, rel=EXACT)
    assert table.active_power_w(0) == pytest.approx(0.3 + c * 1e9 * 0.49, rel=EXACT)


@pytest.mark.parametrize(
    "args",
    [(2e9, 1.0, 0.1, 0.1), (2e9, 1.0, 0.1, 0.5), (0, 1.0, 2, 0.1), (2e9, -1, 2, 0.1)],
)
def test_fit_capacitance_rejects_impossible_inputs(args):
    with pytest.raises(SocsimError):
        fit_capacitance(*args)


@pytest.mark.parametrize(
    "points, message",
    [
        ((), "at least one"),
        ((OperatingPoint(2e9, 1.0), OperatingPoint(1e9, 0.8)), "strictly ascend"),
        ((OperatingPoint(1e9, 0.8), OperatingPoint(1e9, 0.9)), "strictly ascend"),
        ((OperatingPoint(1e9, 0.9), OperatingPoint(2e9, 0.8)), "voltage must not fall"),
    ],
)
def test_table_validation(points, message):
    with pytest.raises(SocsimError, match=message):
        DvfsTable(points, 1e-9)


def test_table_rejects_bad_power_figures():
    points = (OperatingPoint(1e9, 0.8),)
    with pytest.raises(SocsimError, match="capacitance"):
        DvfsTable(points, 0.0)
    with pytest.raises(SocsimError, match="static_w"):
        DvfsTable(points, 1e-9, static_w=-1)
    with pytest.raises(SocsimError, match="idle_w"):
        DvfsTable(points, 1e-9, static_w=0.1, idle_w=1.0)  # busy at level 0 is 0.74 W


@pytest.mark.parametrize("f, v", [(0, 1), (-1e9, 1), (1e9, 0), (math.nan, 1), (math.inf, 1)])
def test_operating_point_validation(f, v):
    with pytest.raises(SocsimError):
        OperatingPoint(f, v)


@pytest.mark.parametrize("level", [-1, 3, 1.0, True, None])
def test_bad_levels(level):
    with pytest.raises(SocsimError, match="level"):
        three_points().frequency_hz(level)


def test_level_lookups():
    table = four_levels()
    assert table.lowest_level_at_least(0.0) == 0
    assert table.lowest_level_at_least(0.5e9) == 0
    assert table.lowest_level_at_least(0.51e9) == 1
    assert table.lowest_level_at_least(1.6e9) == 3
    assert table.lowest_level_at_least(9e9) == 3  # nothing is fast enough: the top
    assert table.lowest_level_at_least(1.6e9, ceiling=1) == 1
    assert table.highest_level_at_most(1.2e9) == 1
    assert table.highest_level_at_most(1.5e9) == 2
    assert table.highest_level_at_most(0.1e9) == 0
    assert table.highest_level_at_most(5e9) == 3


# -- time ---------------------------------------------------------------------------------
def test_time_scale_and_op_time():
    table = three_points()
    assert table.time_scale(2) == 1.0
    assert table.time_scale(0) == 2.0
    assert table.time_scale(1) == pytest.approx(4 / 3, rel=EXACT)
    # compute-bound: 1 ms dispatch + max(10 ms x 2, 4 ms) = 21 ms at 1 GHz
    assert table.op_time_at_level_s(0.010, 0.004, 0.001, 0) == pytest.approx(0.021, rel=EXACT)
    assert table.op_time_at_level_s(0.010, 0.004, 0.001, 2) == pytest.approx(0.011, rel=EXACT)
    # memory-bound at the top: 1 + max(3, 5) = 6 ms; at 1 GHz compute overtakes: 1 + 6 = 7 ms
    assert table.op_time_at_level_s(0.003, 0.005, 0.001, 2) == pytest.approx(0.006, rel=EXACT)
    assert table.op_time_at_level_s(0.003, 0.005, 0.001, 0) == pytest.approx(0.007, rel=EXACT)
    # purely memory-bound work does not slow down at a lower clock
    assert table.op_time_at_level_s(0.0, 0.005, 0.0, 0) == 0.005


def test_rescaled_remaining_time():
    table = three_points()
    # 10 ms compute-bound op at the top, half done (5 ms left); dropping to 1 GHz
    # doubles the rest: 10 ms left.
    assert table.rescaled_remaining_s(0.005, 0.010, 0.0, 0.0, 2, 0) == pytest.approx(0.010)
    assert table.rescaled_remaining_s(0.005, 0.010, 0.0, 0.0, 0, 2) == pytest.approx(0.0025)


# -- energy: race-to-idle vs slow-and-steady -----------------------------------------------
def test_energy_of_one_compute_bound_op_at_two_frequencies():
    # t0 = 10 ms at f_max; E = (static + C f V²) x t0 x f_max / f
    table = three_points(static_w=0.1)
    # top: (0.1 + 2.0) x 0.010 x 1 = 0.021 J
    assert table.energy_of_op_j(0.010, 0.0, 0.0, 2) == pytest.approx(0.021, rel=EXACT)
    # 1 GHz: (0.1 + 0.64) x 0.010 x 2 = 0.0148 J
    assert table.energy_of_op_j(0.010, 0.0, 0.0, 0) == pytest.approx(0.0148, rel=EXACT)
    # the op's share of a multi-core unit scales its energy
    assert table.energy_of_op_j(0.010, 0.0, 0.0, 2, share=0.25) == pytest.approx(0.00525)


def _window_energy(table: DvfsTable, level: int, t0: float = 0.010, window: float = 0.050):
    busy = table.op_time_at_level_s(t0, 0.0, 0.0, level)
    return table.window_energy_j(busy, window, level)


def test_low_static_power_favours_slow_and_steady():
    # window 50 ms, idle 0.05 W, static 0.1 W
    table = three_points(static_w=0.1, idle_w=0.05)
    # top:   2.1 W x 10 ms + 0.05 W x 40 ms = 0.021 + 0.002  = 0.023 J
    # 1 GHz: 0.74 W x 20 ms + 0.05 W x 30 ms = 0.0148 + 0.0015 = 0.0163 J
    assert _window_energy(table, 2) == pytest.approx(0.023, rel=EXACT)
    assert _window_energy(table, 0) == pytest.approx(0.0163, rel=EXACT)
    assert _window_energy(table, 0) < _window_energy(table, 2)


def test_high_static_power_favours_race_to_idle():
    # same op and window, static 1.5 W (leaky silicon)
    table = three_points(static_w=1.5, idle_w=0.05)
    # top:   3.5 W x 10 ms + 0.05 W x 40 ms  = 0.035 + 0.002   = 0.037 J
    # 1 GHz: 2.14 W x 20 ms + 0.05 W x 30 ms = 0.0428 + 0.0015 = 0.0443 J
    assert _window_energy(table, 2) == pytest.approx(0.037, rel=EXACT)
    assert _window_energy(table, 0) == pytest.approx(0.0443, rel=EXACT)
    assert _window_energy(table, 2) < _window_energy(table, 0)


def test_break_even_static_power():
    # (s + 2) x 0.01 + 0.002 = (s + 0.64) x 0.02 + 0.0015  =>  s = 0.77 W
    table = three_points(static_w=0.77, idle_w=0.05)
    assert _window_energy(table, 2) == pytest.approx(_window_energy(table, 0), rel=1e-9)


def test_window_energy_rejects_busy_beyond_window():
    with pytest.raises(SocsimError, match="within the window"):
        three_points().window_energy_j(0.06, 0.05, 0)


def _table_points(raw: list[tuple[float, float]]) -> tuple[OperatingPoint, ...]:
    """Distinct frequencies (GHz, ascending) paired with the voltages sorted ascending."""
    freqs = sorted({round(f, 3) for f, _ in raw})
    volts = sorted(v for _, v in raw)[: len(freqs)]
    return tuple(OperatingPoint(f * 1e9, v) for f, v in zip(freqs, volts, strict=True))


points_strategy = st.lists(
    st.tuples(st.floats(0.1, 4.0), st.floats(0.5, 1.2)), min_size=1, max_size=6
).map(_table_points)


@settings(max_examples=80, deadline=None)
@given(points_strategy, st.floats(0, 0.1), st.floats(0, 0.1), st.floats(0, 2))
def test_op_time_never_grows_with_level_and_switching_energy_never_falls(
    points, compute_s, memory_s, static_w
):
    table = DvfsTable(points, 1e-9, static_w=static_w)
    times = [table.op_time_at_level_s(compute_s, memory_s, 0.0, lv) for lv in range(len(points))]
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(times))
    # a compute-bound op's switching energy is C V² x cycles: the cycles are fixed
    dynamic = [
        table.energy_of_op_j(compute_s, 0.0, 0.0, lv)
        - table.static_w * table.op_time_at_level_s(compute_s, 0.0, 0.0, lv)
        for lv in range(len(points))
    ]
    for lv, energy in enumerate(dynamic):
        expected = 1e-9 * table.voltage_v(lv) ** 2 * compute_s * table.f_max_hz
        assert energy == pytest.approx(expected, rel=1e-9, abs=1e-15)


# -- governors ----------------------------------------------------------------------------
def state(u: float, level: int = 3, cap: int | None = None) -> GovernorInput:
    return GovernorInput(utilisation=u, current_level=level, thermal_cap_level=cap)


def test_registry_holds_the_five_governors():
    assert set(GOVERNORS) == {"performance", "powersave", "fixed", "ondemand", "schedutil"}


def test_performance_and_powersave():
    table = four_levels()
    for u in (0.0, 0.5, 1.0):
        assert choose_level("performance", table, state(u)) == 3
        assert choose_level("powersave", table, state(u)) == 0
    assert choose_level("performance", table, state(0.5, cap=2)) == 2
    assert choose_level("powersave", table, state(0.5, cap=2)) == 0


def test_fixed():
    table = four_levels()
    assert choose_level("fixed", table, state(0.9), {"level": 2}) == 2
    assert choose_level("fixed", table, state(0.9, cap=1), {"level": 2}) == 1
    with pytest.raises(SocsimError, match="level"):
        choose_level("fixed", table, state(0.9), {"level": 7})
    with pytest.raises(ScenarioError, match="missing required key 'level'"):
        choose_level("fixed", table, state(0.9))


@pytest.mark.parametrize(
    "u, current, expected",
    [
        (0.9, 3, 3),  # above 0.8: straight to the top
        (0.8, 3, 3),  # not above: target 2 GHz x 0.8 / 0.8 = 2 GHz -> level 3
        (0.5, 3, 2),  # target 2 x 0.5 / 0.8 = 1.25 GHz -> 1.5 GHz
        (0.3, 3, 1),  # 0.75 GHz -> 1.0 GHz
        (0.2, 3, 0),  # 0.5 GHz exactly -> 0.5 GHz
        (0.0, 3, 0),
        (0.6, 1, 1),  # at 1 GHz: demand 0.6 GHz, target 0.75 GHz -> 1.0 GHz
        (0.85, 1, 3),  # above the threshold at any level: the top
        (0.4, 0, 0),  # at 0.5 GHz: 0.2 GHz demand -> 0.25 GHz target -> level 0
    ],
)
def test_ondemand(u, current, expected):
    assert choose_level("ondemand", four_levels(), state(u, current)) == expected


def test_ondemand_threshold_option_and_cap():
    table = four_levels()
    # up_threshold 0.5: u = 0.45 at the top -> target 2 x 0.45 / 0.5 = 1.8 GHz -> level 3
    assert choose_level("ondemand", table, state(0.45), {"up_threshold": 0.5}) == 3
    assert choose_level("ondemand", table, state(0.55), {"up_threshold": 0.5}) == 3
    assert choose_level("ondemand", table, state(0.9, cap=1)) == 1
    assert choose_level("ondemand", table, state(0.5, cap=1)) == 1  # wants 2, capped


@pytest.mark.parametrize(
    "u, current, expected",
    [
        (0.5, 3, 2),  # 1.25 x 2 GHz x 0.5 = 1.25 GHz -> 1.5 GHz
        (0.8, 3, 3),  # 2.0 GHz
        (0.9, 3, 3),  # 2.25 GHz: beyond the table -> the top
        (0.2, 3, 0),  # 0.5 GHz
        (0.25, 3, 1),  # 0.625 GHz -> 1.0 GHz
        (0.0, 3, 0),
        (0.9, 1, 2),  # at 1 GHz: 1.25 x 0.9 GHz = 1.125 GHz -> 1.5 GHz
        (1.0, 0, 1),  # at 0.5 GHz fully busy: 0.625 GHz -> 1.0 GHz
    ],
)
def test_schedutil(u, current, expected):
    assert choose_level("schedutil", four_levels(), state(u, current)) == expected


def test_schedutil_cap_and_headroom():
    table = four_levels()
    assert choose_level("schedutil", table, state(0.9, cap=0)) == 0
    # headroom 1: 2 GHz x 0.5 = 1.0 GHz -> level 1
    assert choose_level("schedutil", table, state(0.5), {"headroom": 1.0}) == 1


def test_options_are_validated_and_converted():
    assert governor_options("ondemand") == {"up_threshold": 0.8, "window_s": 0.01}
    assert governor_options("schedutil", {"window_ms": 4}) == {"headroom": 1.25, "window_s": 0.004}
    assert governor_options("performance") == {}
    with pytest.raises(ScenarioError, match="up_threshold"):
        governor_options("ondemand", {"up_threshold": 1.5})
    with pytest.raises(ScenarioError, match="did you mean 'up_threshold'"):
        governor_options("ondemand", {"up_treshold": 0.7})
    with pytest.raises(SocsimError, match="did you mean 'ondemand'"):
        governor_options("ondemnd")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"utilisation": 1.2, "current_level": 0},
        {"utilisation": -0.1, "current_level": 0},
        {"utilisation": 0.5, "current_level": -1},
        {"utilisation": 0.5, "current_level": 0, "thermal_cap_level": -1},
        {"utilisation": 0.5, "current_level": 1.0},
    ],
)
def test_governor_input_validation(kwargs):
    with pytest.raises(SocsimError):
        GovernorInput(**kwargs)


def test_current_level_beyond_the_table_is_an_error():
    with pytest.raises(SocsimError, match="level"):
        choose_level("schedutil", four_levels(), state(0.5, 9))


def test_demand_is_utilisation_times_current_frequency():
    assert demand_hz(four_levels(), state(0.5, 1)) == pytest.approx(0.5e9)
    assert allowed_top(four_levels(), state(0.5, cap=9)) == 3


@settings(max_examples=80, deadline=None)
@given(
    points_strategy,
    st.floats(0, 1),
    st.floats(0, 1),
    st.integers(0, 5),
    st.one_of(st.none(), st.integers(0, 6)),
    st.sampled_from(sorted(["performance", "powersave", "ondemand", "schedutil"])),
)
def test_governors_stay_in_range_respect_the_cap_and_are_monotone(
    points, u1, u2, current, cap, name
):
    table = DvfsTable(points, 1e-9)
    current = min(current, table.top)
    low, high = sorted((u1, u2))
    a = choose_level(name, table, GovernorInput(low, current, cap))
    b = choose_level(name, table, GovernorInput(high, current, cap))
    ceiling = table.top if cap is None else min(cap, table.top)
    assert 0 <= a <= ceiling and 0 <= b <= ceiling
    assert a <= b  # more load never lowers the level
    if name == "schedutil" and b < ceiling:
        # a level below the ceiling must meet the target
        target = 1.25 * high * table.frequency_hz(current)
        assert table.frequency_hz(b) >= target * (1 - 1e-9)


def test_numpy_numbers_are_accepted():
    import numpy as np

    table = four_levels()
    s = GovernorInput(np.float32(0.5), np.int64(3), np.int64(2))
    assert s.current_level == 3 and type(s.current_level) is int
    assert choose_level("schedutil", table, s) == 2
    assert table.frequency_hz(np.int64(1)) == 1e9
