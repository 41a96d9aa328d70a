"""Callbacks on SimPy's schedule without an event object each: the engine's hot path.

``env.timeout(d).callbacks.append(f)`` builds a :class:`simpy.events.Timeout` (an
:class:`~simpy.events.Event` with its value, delay and state) only for ``f`` to be
called when it is processed. :func:`after` puts a one-slot record on SimPy's queue
instead, with the same sort key a timeout gets — (now + d, NORMAL priority, the next
event id) — so events are processed in exactly the order SimPy would process the
timeouts, and results stay the same bit for bit; :func:`wake` schedules a record that
is woken again and again (a server's worker) without a new record each time. SimPy's
own loop (``env.step``) and :func:`simulator.engine.loop.step_until` process such a
record like any event: they pop it, call its callbacks with it, and check ``_ok``.

This reads three of SimPy's attributes (``_queue``, ``_now``, ``_eid``); SimPy 4's
``Environment.schedule`` is the reference (``tests/engine/test_clock.py`` checks that
both give the same order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL


class Wakeup:
    """A record SimPy's loop processes like an event: its ``callbacks`` are called with
    it, and it never fails (``_ok``, a class attribute: nothing to set per record)."""

    __slots__ = ("callbacks",)
    _ok = True
    #: what the loop calls with the record (set before each time it is scheduled)
    callbacks: Sequence[Callable[[Any], None]] | None


class Call(Wakeup):
    """A scheduled callback: what SimPy's loop needs of an event, nothing more."""

    __slots__ = ()

    def __init__(self, callback: Callable[[Any], None]):
        self.callbacks = [callback]


def after(env: simpy.Environment, delay_s: float, callback: Callable[[Any], None]) -> None:
    """Call ``callback(record)`` ``delay_s`` (>= 0) from now, ordered as a timeout made now.

    ``callback`` receives the scheduled record as SimPy passes events to callbacks.
    """
    entry = (env._now + delay_s, NORMAL, next(env._eid), Call(callback))
    heappush(env._queue, entry)  # type: ignore[misc]  # a record, not an Event


def wake(
    env: simpy.Environment,
    delay_s: float,
    record: Wakeup,
    callbacks: list[Callable[[Any], None]],
) -> None:
    """Schedule ``record`` itself ``delay_s`` (>= 0) from now, ordered as :func:`after`:
    SimPy's loop then calls each of ``callbacks`` with it.

    For a record that waits for one thing at a time and is woken again and again (a
    server's worker): nothing is allocated per wake-up. ``record`` must have no wake-up
    pending, and ``callbacks`` may be shared between wake-ups (the loop only reads it).
    """
    record.callbacks = callbacks
    entry = (env._now + delay_s, NORMAL, next(env._eid), record)
    heappush(env._queue, entry)  # type: ignore[misc]  # a record, not an Event
