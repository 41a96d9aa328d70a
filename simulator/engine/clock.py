"""Callbacks on SimPy's schedule without an event object each: the engine's hot path.

``env.timeout(d).callbacks.append(f)`` builds a :class:`simpy.events.Timeout` (an
:class:`~simpy.events.Event` with its value, delay and state) only for ``f`` to be
called when it is processed. :func:`after` puts a two-slot record on SimPy's queue
instead, with the same sort key a timeout gets — (now + d, NORMAL priority, the next
event id) — so events are processed in exactly the order SimPy would process the
timeouts, and results stay the same bit for bit. SimPy's own loop (``env.step``) and
:func:`simulator.engine.loop.step_until` process such a record like any event: they
pop it, call its callbacks with it, and check ``_ok``.

This reads three of SimPy's attributes (``_queue``, ``_now``, ``_eid``); SimPy 4's
``Environment.schedule`` is the reference (``tests/engine/test_clock.py`` checks that
both give the same order).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL


class Call:
    """A scheduled callback: what SimPy's loop needs of an event, nothing more."""

    __slots__ = ("_ok", "callbacks")

    def __init__(self, callback: Callable[[Any], None]):
        self.callbacks: list[Callable[[Any], None]] | None = [callback]
        self._ok = True  # it never fails: SimPy's loop checks this after the callbacks


def after(env: simpy.Environment, delay_s: float, callback: Callable[[Any], None]) -> None:
    """Call ``callback(record)`` ``delay_s`` (>= 0) from now, ordered as a timeout made now.

    ``callback`` receives the scheduled record as SimPy passes events to callbacks.
    """
    heappush(env._queue, (env._now + delay_s, NORMAL, next(env._eid), Call(callback)))
