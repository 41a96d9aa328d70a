"""clock.after schedules a callback exactly where SimPy would schedule a timeout made at
the same moment (same time, priority and event id order), so swapping one for the other
cannot reorder a run."""

from __future__ import annotations

import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine.clock import after
from simulator.engine.loop import step_until
from simulator.hardware.dvfs import DvfsTable, OperatingPoint
from simulator.hardware.governors import GOVERNORS, GovernorInput

_delays = st.lists(st.sampled_from([0, 0.0, 1e-3, 2e-3, 0.5]), min_size=1, max_size=12)


def _order(delays, use_after: list[bool]) -> list[tuple[int, float]]:
    env = simpy.Environment()
    seen: list[tuple[int, float]] = []

    def chain(k: int, delay: float, fast: bool):
        def fire(_event) -> None:
            seen.append((k, env.now))
            if k < 40:  # each callback schedules the next, as the engine's do
                schedule(k + 10, delay, fast)

        return fire

    def schedule(k: int, delay: float, fast: bool) -> None:
        if fast:
            after(env, delay, chain(k, delay, fast))
        else:
            env.timeout(delay).callbacks.append(chain(k, delay, fast))

    for k, (delay, fast) in enumerate(zip(delays, use_after, strict=False)):
        schedule(k, delay, fast)
    step_until(env, None, "clock")
    return seen


@settings(max_examples=60, deadline=None)
@given(_delays, st.lists(st.booleans(), min_size=12, max_size=12))
def test_after_orders_callbacks_as_simpy_timeouts_do(delays, use_after):
    assert _order(delays, use_after) == _order(delays, [False] * 12)


def test_time_zero_stays_an_int_as_simpy_keeps_it():
    env = simpy.Environment()
    seen = []
    after(env, 0, lambda _e: seen.append(env.now))
    step_until(env, None, "clock")
    assert seen == [0] and type(seen[0]) is int


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.0, 1.0),
    st.integers(0, 20),
    st.one_of(st.none(), st.integers(0, 20)),
)
def test_a_trusted_governor_input_decides_as_a_checked_one(utilisation, level, cap):
    points = tuple(
        OperatingPoint(f * 1e9, 0.6 + 0.1 * k) for k, f in enumerate((0.3, 0.8, 1.5, 2.4))
    )
    for table in (DvfsTable(points, 1e-9), DvfsTable(points[:1], 1e-9)):
        current = min(level, table.top)
        for name in ("ondemand", "schedutil", "performance", "powersave"):
            function = GOVERNORS.get(name).function
            checked = function(table, GovernorInput(utilisation, current, cap), {})
            trusted = function(table, GovernorInput.trusted(utilisation, current, cap), {})
            assert checked == trusted
