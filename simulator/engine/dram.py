"""A node's DRAM as a fluid channel shared by the ops its units run at once.

An op that moves DRAM bytes registers a :class:`Stream` when it starts
(:meth:`DramChannel.begin`); after its fixed part (dispatch, barrier) its body demands
``bytes / body_s`` (the rate it reaches alone). Whenever a body starts or a stream ends,
the channel shares its bandwidth by :func:`~simulator.hardware.dram.water_fill` and each
body progresses at ``allotted / demand`` of its uncontended speed. As a link's flows do
(:mod:`simulator.engine.links`), progress is integrated exactly between events and one
:class:`~simulator.engine.servers.Alarm` holds the next event (a body start or a
projected end); a re-set alarm makes the older wake-up stale.

The unit's server first sleeps the op's *uncontended* duration (an op never runs faster
than alone), then asks :meth:`DramChannel.end`: None when the body is done, else an
event that fires when it is. An op that never overlaps another on its node thus costs no
event beyond its own timeout (the fast path: nothing is shared, nothing recomputed).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import simpy

from simulator.engine.servers import Alarm
from simulator.hardware.dram import fill_unchecked

#: relative body time under which a stream counts as done (absorbs float rounding)
_EPS = 1e-9


class Stream:
    """One op's DRAM traffic: its demand and the uncontended body time it has left."""

    __slots__ = (
        "body_from_s",
        "body_s",
        "channel",
        "demand_bps",
        "done",
        "duration_s",
        "left_s",
        "slowed",
        "speed",
        "waiter",
    )

    def __init__(
        self,
        channel: DramChannel,
        duration_s: float,
        body_from_s: float,
        body_s: float,
        nbytes: float,
    ):
        self.channel = channel
        self.duration_s = duration_s  # uncontended op time: the server's first sleep
        self.body_from_s = body_from_s
        self.body_s = body_s
        self.left_s = body_s  # uncontended body seconds still to run
        self.demand_bps = nbytes / body_s
        self.speed = 1.0  # fraction of the uncontended speed (allotted / demand)
        self.done = False
        self.slowed = False  # its body ran below full speed at some time
        self.waiter: simpy.Event | None = None


class DramChannel:
    """The DRAM of one node.

    Parameters
    ----------
    env : simpy.Environment
    name : str
        The node's name.
    bandwidth_bps : float
        Bytes/s all running ops share (finite, > 0).
    on_share : callable(now, streams) or None
        Told after every re-share (tests record the allotments through it).
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        bandwidth_bps: float,
        on_share: Callable[[float, tuple[Stream, ...]], None] | None = None,
    ):
        self.env = env
        self.name = name
        self.bandwidth_bps = bandwidth_bps
        self.on_share = on_share
        self.streams: list[Stream] = []
        self._last_s = 0.0
        self._alarm = Alarm(env)
        self._alarm_s = math.inf  # when the pending wake-up fires
        self._free = True  # the streams' demands fit in the bandwidth: all at full speed
        self._demand_bps = 0.0  # what the streams demand together

    def begin(self, now: float, duration_s: float, fixed_s: float, nbytes: float) -> Stream:
        """Register an op that starts now: ``duration_s`` uncontended, of which ``fixed_s``
        moves no DRAM bytes; its body moves ``nbytes``. Returns the handle for :meth:`end`."""
        stream = Stream(self, duration_s, now + fixed_s, duration_s - fixed_s, nbytes)
        total = self._demand_bps + stream.demand_bps
        if self._free and total <= self.bandwidth_bps:
            # nobody is short of bandwidth, before or after: every body runs at full
            # speed, nothing to recompute (progress is integrated lazily from each
            # body's start at speed 1)
            self._demand_bps = total
            self.streams.append(stream)
            return stream
        if fixed_s > 0:
            # the shares change only when its body begins: wake up then
            self._demand_bps = total
            self._free = False
            stream.speed = 0.0
            self.streams.append(stream)
            if stream.body_from_s < self._alarm_s:
                self._alarm.set(fixed_s, self._wake)
                self._alarm_s = stream.body_from_s
            return stream
        self._advance(now)
        self.streams.append(stream)
        self._share(now)
        return stream

    def end(self, stream: Stream, now: float) -> simpy.Event | None:
        """The op's uncontended duration has passed: None if its body is done, else an
        event that succeeds when it is."""
        if stream.done:
            return None
        if not stream.slowed:  # it ran at full speed all along: its body is done now
            if self._free:  # nobody else's speed changes
                self.streams.remove(stream)
                self._demand_bps -= stream.demand_bps
                stream.done = True
                return None
            self._advance(now)
            stream.left_s = 0.0
        else:
            self._advance(now)
        if _finished(stream, now):
            stream.left_s = 0.0
            stream.done = True
            self.streams.remove(stream)
            self._share(now)
            return None
        stream.waiter = self.env.event()
        self._share(now)  # its end needs a wake-up now
        return stream.waiter

    def cancel(self, stream: Stream, now: float) -> None:
        """The op was cut at ``now`` (its unit failed): its traffic stops, the others share."""
        if stream.done:
            return
        self._advance(now)
        stream.done = True
        self.streams.remove(stream)
        self._share(now)

    # -- the fluid model -------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        last = self._last_s
        for s in self.streams:
            since = s.body_from_s if s.body_from_s > last else last
            if now > since and s.speed:
                s.left_s -= s.speed * (now - since)
        self._last_s = now

    def _share(self, now: float) -> None:
        """Finish what is done, share the bandwidth, schedule the next event.

        Only two things need a wake-up: a body that starts while the bandwidth is short
        (the shares change then), and the end of a body whose op has already slept its
        uncontended time (its server waits on :attr:`Stream.waiter`). Every other body
        ends when its server wakes (it ran at full speed), which calls :meth:`end`.
        """
        streams = self.streams
        finished = [s for s in streams if s.body_from_s <= now and _finished(s, now)]
        for s in finished:
            s.left_s = 0.0
            s.done = True
            streams.remove(s)
        total = 0.0
        for s in streams:
            total += s.demand_bps
        self._demand_bps = total
        next_s = math.inf
        if total <= self.bandwidth_bps:
            self._free = True
            for s in streams:
                s.speed = 1.0  # a body yet to start will run at full speed from its start
                if s.waiter is not None:
                    next_s = min(next_s, max(s.body_from_s - now, 0.0) + s.left_s)
        else:
            self._free = False
            running = [s for s in streams if s.body_from_s <= now]
            allotted = fill_unchecked([s.demand_bps for s in running], self.bandwidth_bps)
            for s, a in zip(running, allotted, strict=True):
                s.speed = min(a / s.demand_bps, 1.0)
                if s.speed < 1.0:
                    s.slowed = True
                if s.waiter is not None:
                    next_s = min(next_s, s.left_s / s.speed)
            for s in streams:
                if s.body_from_s > now:
                    s.speed = 0.0  # its body has not begun: it demands nothing yet
                    next_s = min(next_s, s.body_from_s - now)
        if next_s != self._alarm_s - now:
            if math.isfinite(next_s):
                self._alarm.set(next_s, self._wake)
                self._alarm_s = now + next_s
            else:
                self._alarm.clear()
                self._alarm_s = math.inf
        if self.on_share is not None:
            self.on_share(now, tuple(streams))
        for s in finished:
            if s.waiter is not None:
                s.waiter.succeed()

    def _wake(self) -> None:
        now = self.env.now
        self._alarm_s = math.inf
        self._advance(now)
        self._share(now)


def _finished(s: Stream, now: float) -> bool:
    """Whether the body is done: what is left is rounding, or shorter than the clock's
    resolution at ``now`` (a wake-up could not move time on; see ``links._advance``)."""
    return s.left_s <= _EPS * s.body_s or (s.speed > 0 and now + s.left_s / s.speed == now)
