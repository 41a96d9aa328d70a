"""The engine's event loop: SimPy's ``env.run`` without its ambiguities.

``env.run(until=event)`` reports an empty schedule as a ``RuntimeError``, the same type a
callback may raise; the engine used to swallow both (``except RuntimeError: pass``), so a
failing callback ended a run as if it were complete. Here an empty schedule ends the loop
and any exception from a callback ends the run naming the scenario and simulated time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from heapq import heappop

import simpy

from simulator.errors import RunFailedError, SimulationError, SocsimError
from simulator.limits import MAX_HORIZON_S

#: Events processed between two looks at the wall clock and the simulated time (a look
#: costs ~100 ns: about 1e-5 of the events' own time).
PROGRESS_STEPS = 4096
#: Wall-clock seconds before the first progress report, and between two reports.
PROGRESS_AFTER_S, PROGRESS_EVERY_S = 3.0, 1.0
#: ``progress(now_s, issued, completed)``: simulated time, requests issued and completed.
Progress = Callable[[float, int, int], None]


def step_until(
    env: simpy.Environment,
    until: simpy.Event | None,
    scenario: str,
    report: Callable[[float], None] | None = None,
) -> None:
    """Process events until ``until`` is processed (None: until none are left).

    Every :data:`PROGRESS_STEPS` events the simulated time is checked against
    :data:`~simulator.limits.MAX_HORIZON_S` and, when ``report`` is given, the wall clock
    read and ``report(now_s)`` called at most once a second after the first 3 s.

    Raises
    ------
    RunFailedError
        When a callback raises anything but a SocsimError: names ``scenario`` and the
        simulated time, with the original exception as ``__cause__``.
    SocsimError
        A callback's own, with a note naming the scenario and the simulated time.
    SimulationError
        When the simulated time passes the horizon bound.
    """
    if until is not None:
        until.callbacks.append(simpy.core.StopSimulation.callback)
    next_report = time.monotonic() + PROGRESS_AFTER_S
    try:
        while _process(env, PROGRESS_STEPS):
            _check_horizon(env.now)  # e.g. an op of 1e300 FLOPs: stop, not hang
            if report is not None and time.monotonic() >= next_report:
                report(env.now)
                next_report = time.monotonic() + PROGRESS_EVERY_S
        _check_horizon(env.now)  # every event was processed
    except simpy.core.StopSimulation:
        _check_horizon(env.now)  # ``until`` happened
    except SocsimError as exc:  # keeps its type (callers catch PlacementError...)
        exc.add_note(f"in scenario '{scenario}' at simulated t = {env.now:.9g} s")
        raise
    except (MemoryError, KeyboardInterrupt):
        raise  # not the scenario's failure: the command line reports these itself
    except Exception as exc:
        raise RunFailedError(scenario, env.now, exc) from exc


def _process(env: simpy.Environment, count: int) -> bool:
    """Process up to ``count`` events; returns False once none is left.

    ``env.step`` inlined (a call per event is a tenth of a run): pop the next event, set
    the clock, call its callbacks, and raise what a failed event that nobody defused
    carries, as a fresh copy chained to the original, exactly as SimPy does.
    """
    queue = env._queue
    for _ in range(count):
        if not queue:
            return False
        env._now, _, _, event = heappop(queue)
        # SimPy types Event.callbacks without the None of a processed event (its own
        # ``step`` ignores this line's error too)
        callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc
    return True


def _check_horizon(now_s: float) -> None:
    if now_s > MAX_HORIZON_S:
        raise SimulationError(
            f"simulated time reached {now_s:.3g} s, beyond the {MAX_HORIZON_S:.3g} s "
            "horizon (MAX_HORIZON_S)"
        )
