"""The windowed busy time of DVFS units: exact, order-free and O(1) per decision."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import SimulationError
from simulator.hardware.busy_window import FINEST_SCALED, BusyWindow, SerialBusyWindow


def reference_busy_s(intervals, now: float, window_s: float) -> float:
    """The busy time by definition: exact rationals over every interval, rounded once."""
    start = Fraction(now - window_s)  # the engine's window start is this float
    total = Fraction(0)
    for a, b in intervals:
        high = min(Fraction(b), Fraction(now))
        low = max(Fraction(a), start)
        if high > low:
            total += high - low
    return float(total)


times = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)


@st.composite
def schedules(draw):
    """A window, and a run of queries at non-decreasing times, each followed by ops
    that start at the query time (as the engine records them) and end at or after it."""
    window_s = draw(st.sampled_from([1e-3, 0.01, 0.1, 0.3, 1.0, 2.5]) | times.filter(bool))
    steps = draw(st.lists(st.tuples(times, st.lists(times, max_size=3)), max_size=40))
    now, out = 0.0, []
    for gap, durations in steps:
        now = now + gap * draw(st.sampled_from([0.0, 1e-6, 1e-3, 0.1, 1.0]))
        scale = draw(st.sampled_from([0.0, 1e-3, 0.1, 1.0]))
        out.append((now, [now + d * scale for d in durations]))
    return window_s, out


def replay(window_s, steps, extra=None):
    """Busy times at each query of ``steps`` (with ``extra`` recorded first, if given)."""
    window = BusyWindow(window_s)
    if extra is not None:
        window.record(*extra)
    out, recorded = [], [] if extra is None else [extra]
    for now, ends in steps:
        out.append((window.busy_s(now), reference_busy_s(recorded, now, window_s)))
        for end in ends:
            window.record(now, end)
            recorded.append((now, end))
    return out


@settings(max_examples=300, deadline=None)
@given(schedules())
def test_busy_time_equals_the_exact_reference(schedule):
    answers = replay(*schedule)
    assert [ours for ours, _ in answers] == [exact for _, exact in answers]
    # same schedule, fresh object: the same floats (no hidden state, no order effects)
    assert replay(*schedule) == answers


@settings(max_examples=100, deadline=None)
@given(schedules(), times)
def test_one_more_interval_never_lowers_the_busy_time(schedule, length_s):
    window_s, steps = schedule
    plain = replay(window_s, steps)
    more = replay(window_s, steps, extra=(0.0, length_s))
    assert all(m >= p for (m, _), (p, _) in zip(more, plain, strict=True))
    assert all(ours >= 0.0 for ours, _ in more)


def busy(window_s, intervals, now):
    window = BusyWindow(window_s)
    for a, b in intervals:
        window.record(a, b)
    return window.busy_s(now)


def test_an_interval_ending_at_the_window_start_counts_nothing():
    assert busy(1.0, [(0.0, 1.0)], 2.0) == 0.0
    assert busy(1.0, [(0.0, 1.0), (1.5, 1.75)], 2.0) == 0.25


def test_zero_length_intervals_count_nothing():
    assert busy(1.0, [(0.25, 0.25), (0.5, 0.5)], 0.5) == 0.0


def test_overlapping_slots_each_count():
    assert busy(1.0, [(0.0, 1.0), (0.0, 1.0), (0.5, 0.75)], 1.0) == 2.25


def test_ops_running_past_now_count_up_to_now():
    # [1, 3] queried at 2 with a 1.5 s window [0.5, 2]: 1 s of it so far
    assert busy(1.5, [(1.0, 3.0)], 2.0) == 1.0
    # an op covering the whole window counts the whole window
    assert busy(1.0, [(0.0, 10.0)], 5.0) == 1.0


def test_an_op_straddling_the_window_start_is_clipped():
    assert busy(1.0, [(0.0, 2.0)], 2.5) == 0.5


def test_the_sum_is_exact_not_left_to_right():
    # 0.1 + 0.2 + 0.3 is 0.6000000000000001 in floats; the exact sum of those three
    # doubles rounds to 0.6
    intervals = [(0.0, 0.1), (0.0, 0.2), (0.0, 0.3)]
    assert (0.1 + 0.2) + 0.3 == 0.6000000000000001
    assert busy(1.0, intervals, 0.3) == 0.6
    assert busy(1.0, intervals[::-1], 0.3) == 0.6


def test_subnormal_times_are_exact():
    tiny = math.ulp(0.0)  # 5e-324, the smallest float
    assert busy(1.0, [(0.0, tiny), (tiny, 2 * tiny)], 2 * tiny) == 2 * tiny


def test_a_finer_time_later_rescales_the_totals():
    # whole seconds first (unit 1 s), then a time that needs 2**-50 s: the totals and the
    # stored intervals are shifted, the answers stay exact
    window = BusyWindow(4.0)
    window.record(0.0, 1.0)
    window.record(0.0, 3.0)
    assert window.busy_s(2.0) == 3.0
    fine = 2.0 + 2.0**-50
    assert window.busy_s(fine) == reference_busy_s([(0.0, 1.0), (0.0, 3.0)], fine, 4.0)
    window.record(fine, 3.5)
    assert window.busy_s(5.5) == 1.5 + (1.5 - 2.0**-50)  # [1.5, 3] and [fine, 3.5]
    assert window.busy_s(5.5) == reference_busy_s([(0.0, 1.0), (0.0, 3.0), (fine, 3.5)], 5.5, 4.0)


def test_out_of_order_use_is_an_error():
    window = BusyWindow(1.0)
    window.record(1.0, 2.0)
    with pytest.raises(SimulationError, match="out of order"):
        window.record(0.5, 2.0)
    with pytest.raises(SimulationError, match="out of order"):
        window.record(1.5, 1.0)
    with pytest.raises(SimulationError, match="before"):
        window.busy_s(0.5)
    window.busy_s(3.0)
    with pytest.raises(SimulationError, match="before"):
        window.busy_s(2.0)
    with pytest.raises(SimulationError, match="window_s"):
        BusyWindow(0.0)


@st.composite
def serial_schedules(draw):
    """A one-slot unit's run: ops back to back or after a gap, each asked about at its
    start (when every earlier op has ended), as the engine asks a one-slot DVFS unit."""
    window_s = draw(st.sampled_from([1e-3, 0.01, 0.1, 1.0]) | times.filter(bool))
    now, out = 0.0, []
    for gap, length in draw(st.lists(st.tuples(times, times), max_size=40)):
        now = now + gap * draw(st.sampled_from([0.0, 0.0, 1e-6, 1e-3, 0.1, 1.0]))
        end = now + length * draw(st.sampled_from([0.0, 1e-4, 1e-3, 0.1, 1.0]))
        out.append((now, end))
        now = end
    return window_s, out


@settings(max_examples=300, deadline=None)
@given(serial_schedules())
def test_the_serial_window_answers_as_the_general_one(schedule):
    """Both are the exact busy time correctly rounded: the same floats, the reference's."""
    window_s, ops = schedule
    serial, general, done = SerialBusyWindow(window_s), BusyWindow(window_s), []
    for start_s, end_s in ops:
        ours = serial.busy_s(start_s)
        assert ours == general.busy_s(start_s) == reference_busy_s(done, start_s, window_s)
        serial.record(start_s, end_s)
        general.record(start_s, end_s)
        done.append((start_s, end_s))


def test_the_serial_window_refuses_overlaps_and_early_queries():
    window = SerialBusyWindow(1.0)
    window.record(0.0, 1.0)
    with pytest.raises(SimulationError, match="overlaps"):
        window.record(0.5, 2.0)
    with pytest.raises(SimulationError, match="still runs"):
        window.busy_s(0.75)
    assert window.busy_s(1.5) == 0.5
    with pytest.raises(SimulationError, match="before an earlier query"):
        window.busy_s(1.25)


def test_a_start_finer_than_its_end_is_recorded_exactly():
    """Recording [1e-6, 1.01e-4] converts the end, then the start, which needs a finer
    unit: the end is converted again (hypothesis found the stale end in the serial
    window; the general one shares the code path when asked at another instant)."""
    for window in (BusyWindow(1e-3), SerialBusyWindow(1e-3)):
        window.record(1e-6, 0.000101)
        assert window.busy_s(0.000101) == reference_busy_s([(1e-6, 0.000101)], 0.000101, 1e-3)


@pytest.mark.parametrize("exponent", [899, 900, 901, 1022, 1074])
@pytest.mark.parametrize("window_class", [BusyWindow, SerialBusyWindow])
def test_busy_seconds_at_the_finest_scaled_unit_and_below(exponent, window_class):
    """Units down to 2**-900 s convert by scaling a float (FINEST_SCALED), finer ones by
    dividing ints: both correctly rounded, across the boundary and into subnormals."""
    step = 2.0**-exponent
    intervals = [(0.0, 3 * step), (3 * step, 0.1 + 5 * step)]  # the unit becomes 2**-e
    for now in (0.1 + 5 * step, 0.3, 1.1):
        window = window_class(1.0)
        for a, b in intervals:
            window.record(a, b)
        assert window.busy_s(now) == reference_busy_s(intervals, now, 1.0)
        assert (window._inverse != 0.0) == (exponent <= FINEST_SCALED)
