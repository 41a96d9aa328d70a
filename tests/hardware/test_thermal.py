"""The lumped RC thermal model against closed-form answers."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simulator.errors import SocsimError
from simulator.hardware.dvfs import DvfsTable, OperatingPoint
from simulator.hardware.thermal import PHONE_THERMAL, ThermalModel, cap_level_for

EXACT = 1e-12


def model(**changes) -> ThermalModel:
    """R = 10 K/W, C = 10 J/K (τ = 100 s), ambient 25 °C, throttle 40 °C, release 35 °C."""
    fields = {
        "resistance_k_per_w": 10.0,
        "capacitance_j_per_k": 10.0,
        "ambient_c": 25.0,
        "throttle_c": 40.0,
        "release_c": 35.0,
    }
    fields.update(changes)
    return ThermalModel(**fields)


def test_time_constant_and_steady_state():
    m = model()
    assert m.time_constant_s == 100.0
    assert m.steady_state_c(2.0) == 45.0  # 25 + 2 x 10
    assert m.steady_state_c(0.0) == 25.0
    assert m.sustainable_power_w() == pytest.approx(1.5)  # (40 - 25) / 10
    assert m.sustainable_power_w(35.0) == pytest.approx(1.0)


def test_temperature_after_hand_values():
    m = model()
    # heating from ambient at 2 W for one τ: 45 - 20/e
    assert m.temperature_after(25.0, 2.0, 100.0) == pytest.approx(45 - 20 / math.e, rel=EXACT)
    assert m.temperature_after(25.0, 2.0, 100.0) == pytest.approx(37.6424111765712, rel=1e-12)
    # two τ: 45 - 20/e²
    assert m.temperature_after(25.0, 2.0, 200.0) == pytest.approx(45 - 20 / math.e**2)
    # cooling from 45 °C with no power for one τ: 25 + 20/e
    assert m.temperature_after(45.0, 0.0, 100.0) == pytest.approx(32.357588823428846)
    # no time, no change; at the steady state, no change
    assert m.temperature_after(30.0, 2.0, 0.0) == 30.0
    assert m.temperature_after(45.0, 2.0, 1e6) == pytest.approx(45.0)


def test_time_to_reach_hand_values():
    m = model()
    # 25 -> 35 °C at 2 W (T_ss 45): 100 ln(20 / 10) = 100 ln 2
    assert m.time_to_reach(25.0, 2.0, 35.0) == pytest.approx(100 * math.log(2), rel=EXACT)
    assert m.time_to_reach(25.0, 2.0, 35.0) == pytest.approx(69.31471805599453)
    # 25 -> 40 °C: 100 ln(20 / 5) = 100 ln 4
    assert m.time_to_reach(25.0, 2.0, 40.0) == pytest.approx(138.62943611198907)
    # cooling 45 -> 35 °C with no power: 100 ln(20 / 10)
    assert m.time_to_reach(45.0, 0.0, 35.0) == pytest.approx(100 * math.log(2))


@pytest.mark.parametrize(
    "t0, power, target",
    [
        (25.0, 2.0, 45.0),  # the asymptote itself is never reached
        (25.0, 2.0, 50.0),  # beyond the steady state
        (25.0, 2.0, 20.0),  # behind: heating never goes down
        (30.0, 0.0, 40.0),  # cooling never goes up
        (45.0, 2.0, 40.0),  # already at the steady state: it stays there
    ],
)
def test_time_to_reach_never(t0, power, target):
    assert model().time_to_reach(t0, power, target) == math.inf


def test_time_to_reach_already_there():
    assert model().time_to_reach(30.0, 2.0, 30.0) == 0.0
    assert model().time_to_reach(45.0, 2.0, 45.0) == 0.0


def test_hysteresis():
    m = model()
    assert m.next_throttled(39.9, False) is False
    assert m.next_throttled(40.0, False) is True
    assert m.next_throttled(36.0, True) is True  # between release and throttle: stays
    assert m.next_throttled(35.0, True) is False
    assert m.next_throttled(37.0, False) is False


def test_time_to_transition():
    m = model()
    # not throttled, heating at 2 W from 25 °C: reaches 40 °C after 100 ln 4
    assert m.time_to_transition_s(25.0, 2.0, False) == pytest.approx(100 * math.log(4))
    # stale state: already above the threshold
    assert m.time_to_transition_s(41.0, 2.0, False) == 0.0
    assert m.time_to_transition_s(34.0, 2.0, True) == 0.0
    # throttled but still heating: never released
    assert m.time_to_transition_s(42.0, 2.0, True) == math.inf
    # throttled, cooling at 0 W from 42 °C to 35 °C: 100 ln(17 / 10)
    assert m.time_to_transition_s(42.0, 0.0, True) == pytest.approx(100 * math.log(1.7))
    # 1 W never heats past 35 °C, so it never throttles
    assert m.time_to_transition_s(25.0, 1.0, False) == math.inf


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"resistance_k_per_w": 0.0}, "resistance"),
        ({"capacitance_j_per_k": -1.0}, "capacitance"),
        ({"capacitance_j_per_k": math.inf}, "capacitance"),
        ({"release_c": 40.0}, "release_c"),
        ({"release_c": 45.0}, "release_c"),
        ({"ambient_c": 36.0}, "ambient_c"),
        ({"ambient_c": math.nan}, "ambient_c"),
    ],
)
def test_validation(changes, message):
    with pytest.raises(SocsimError, match=message):
        model(**changes)


def test_bad_arguments():
    with pytest.raises(SocsimError, match="seconds"):
        model().temperature_after(25.0, 1.0, -1.0)
    with pytest.raises(SocsimError, match="power"):
        model().temperature_after(25.0, -1.0, 1.0)
    with pytest.raises(SocsimError, match="power"):
        model().time_to_reach(25.0, math.nan, 30.0)


def test_cap_level_for():
    table = DvfsTable(
        (OperatingPoint(0.5e9, 0.6), OperatingPoint(1.0e9, 0.75), OperatingPoint(2.0e9, 1.0)),
        1e-9,
    )
    assert cap_level_for(table, False, 1.2e9) is None
    assert cap_level_for(table, True, 1.2e9) == 1
    assert cap_level_for(table, True, 1.0e9) == 1
    assert cap_level_for(table, True, 0.1e9) == 0


# -- phone preset --------------------------------------------------------------------------
def test_phone_preset_figures():
    m = PHONE_THERMAL
    assert m.resistance_k_per_w == pytest.approx(20 / 3)  # (45 - 25) / 3 W
    assert m.time_constant_s == pytest.approx(2000 / 3)  # 6.67 K/W x 100 J/K
    assert m.sustainable_power_w() == pytest.approx(3.0)


@pytest.mark.parametrize(
    "power, ratio",
    [
        (5.0, 2.5),  # T_ss 58.33: (25 - 58.33) / (45 - 58.33) = 2.5
        (6.0, 2.0),  # T_ss 65:    40 / 20 = 2
        (8.0, 1.6),  # T_ss 78.33: 53.33 / 33.33 = 1.6
    ],
)
def test_phone_preset_throttles_sustained_load_within_minutes(power, ratio):
    seconds = PHONE_THERMAL.time_to_reach(25.0, power, 45.0)
    assert seconds == pytest.approx(2000 / 3 * math.log(ratio), rel=1e-12)
    assert 4 * 60 < seconds < 11 * 60  # 5.2 min at 8 W ... 10.2 min at 5 W


def test_phone_preset_sustains_its_budget():
    assert PHONE_THERMAL.time_to_reach(25.0, 3.0, 45.0) == math.inf
    # after throttling at 45 °C, idling at 0.5 W releases at 42 °C in τ ln(16.67/13.67)
    assert PHONE_THERMAL.time_to_reach(45.0, 0.5, 42.0) == pytest.approx(
        2000 / 3 * math.log((45 - 25 - 10 / 3) / (42 - 25 - 10 / 3))
    )


# -- properties ----------------------------------------------------------------------------
temps = st.floats(0.0, 120.0)
powers = st.floats(0.0, 15.0)
times = st.floats(0.0, 5000.0)


@settings(max_examples=150, deadline=None)
@given(temps, powers, times, times)
def test_temperature_moves_monotonically_toward_steady_state(t0, power, s1, s2):
    m = PHONE_THERMAL
    steady = m.steady_state_c(power)
    early, late = sorted((s1, s2))
    a = m.temperature_after(t0, power, early)
    b = m.temperature_after(t0, power, late)
    lo, hi = sorted((t0, steady))
    tol = 1e-9 * (1 + abs(t0) + abs(steady))
    assert lo - tol <= a <= hi + tol and lo - tol <= b <= hi + tol
    assert abs(b - steady) <= abs(a - steady) + tol
    # two steps equal one step of the summed time
    assert m.temperature_after(a, power, late - early) == pytest.approx(b, rel=1e-9, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(temps, powers, st.floats(1.0, 3000.0))
def test_time_to_reach_inverts_temperature_after(t0, power, seconds):
    m = PHONE_THERMAL
    target = m.temperature_after(t0, power, seconds)
    steady = m.steady_state_c(power)
    assume(abs(target - t0) > 1e-6 and abs(target - steady) > 1e-6)
    assert m.time_to_reach(t0, power, target) == pytest.approx(seconds, rel=1e-5, abs=1e-5)


@settings(max_examples=150, deadline=None)
@given(temps, powers, st.floats(0.01, 0.99))
def test_temperature_at_time_to_reach_is_the_target(t0, power, fraction):
    m = PHONE_THERMAL
    steady = m.steady_state_c(power)
    assume(abs(steady - t0) > 1e-3)
    target = t0 + fraction * (steady - t0)  # strictly between: reachable
    seconds = m.time_to_reach(t0, power, target)
    assert math.isfinite(seconds) and seconds > 0
    assert m.temperature_after(t0, power, seconds) == pytest.approx(
        target, abs=1e-9 * (1 + abs(t0))
    )
    # and a target past the steady state is never reached
    assert m.time_to_reach(t0, power, steady + (steady - t0)) == math.inf
