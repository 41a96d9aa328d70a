"""A shared wireless medium as one fluid channel of airtime, seen through per-station ports.

Each station link of a medium (``kind: shared``) has two directions, and each direction
is a :class:`MediumPort`: a queue that serves its flows one at a time (a station's
transmit queue, or the access point's queue for that station), at the throughput the
medium's fairness rule gives it among the ports that have data
(:func:`~simulator.network.medium.medium_rates`). Between events every rate is constant,
so bits are integrated exactly as in :class:`~simulator.engine.links.FluidLink`; the
medium reschedules its next event (a head flow's last bit) whenever a port starts or
stops contending. A port offers what the network asks of a link direction (``submit``,
``cancel``, ``flows``, ``throughput_bps``), so hops, radios and timeouts need nothing new.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import simpy

from simulator.engine.links import EPS_BITS, Flow
from simulator.engine.servers import Alarm
from simulator.network.medium import medium_rates


class MediumPort:
    """One direction of one station's link to a medium: a FIFO queue of flows.

    Parameters
    ----------
    medium : SharedMedium
    name : str
    rate_bps : float
        The direction's rate alone on the medium, bit/s.
    on_rate : callable(total_bps) or None
        Told the port's throughput after every change (its radio draws power by it).
    latency_s : float
        Delay after a flow's last bit until it is delivered.
    """

    __slots__ = ("_total_bps", "flows", "latency_s", "medium", "name", "on_rate", "rate_bps")

    def __init__(self, medium, name, rate_bps, on_rate, latency_s):
        self.medium = medium
        self.name = name
        self.rate_bps = rate_bps
        self.on_rate = on_rate
        self.latency_s = latency_s
        self.flows: list[Flow] = []
        self._total_bps = 0.0

    @property
    def throughput_bps(self) -> float:
        """Bit/s the port carries now (0 when it has nothing to send)."""
        return self._total_bps

    @property
    def updated_s(self) -> float:
        """When the flows' bit counts were last brought up to date (s): the medium's."""
        return self.medium._last_s

    def submit(self, bits: float, on_start, on_finish, payload: Any) -> Flow:
        """Queue a flow of ``bits``; callbacks as :meth:`FluidLink.submit`'s."""
        medium = self.medium
        medium._advance()
        flow = Flow(float(bits), on_start, on_finish, payload)
        self.flows.append(flow)
        if len(self.flows) == 1:
            medium.busy[self] = None
        medium._changed()
        return flow

    def cancel(self, flow: Flow) -> float:
        """Withdraw an unfinished flow; returns the bits it had sent."""
        medium = self.medium
        medium._advance()
        self.flows.remove(flow)
        flow.rate_bps = 0.0
        if not self.flows:
            medium.busy.pop(self, None)
        medium._changed()
        return flow.bits_total - max(flow.bits_left, 0.0)


class SharedMedium:
    """The airtime of one access point, shared by the head flows of its busy ports.

    Parameters
    ----------
    env : simpy.Environment
    name : str
    fairness : str
        ``throughput`` or ``airtime`` (:data:`~simulator.network.medium.FAIRNESS`).
    """

    def __init__(self, env: simpy.Environment, name: str, fairness: str):
        self.env = env
        self.name = name
        self.fairness = fairness
        #: ports with flows, in the order they became busy (a dict: ordered, O(1) removal)
        self.busy: dict[MediumPort, None] = {}
        self._last_s = 0.0
        self._alarm = Alarm(env)
        self._due_now = False  # an update is scheduled for this instant already
        #: seconds during which some port had data: the medium's airtime in use
        self.busy_s = 0.0

    def port(
        self,
        name: str,
        rate_bps: float,
        on_rate: Callable[[float], None] | None,
        latency_s: float,
    ) -> MediumPort:
        """A new direction on this medium."""
        return MediumPort(self, name, rate_bps, on_rate, latency_s)

    def _changed(self) -> None:
        """A port started or stopped contending: divide the airtime again, once for all
        the changes of this instant (1,000 phones sending at once are one update, not
        1,000 of 1,000 ports each)."""
        if not self._due_now:
            self._due_now = True
            self._alarm.set(0.0, self._wake)

    def _advance(self) -> None:
        now = self.env.now
        dt = now - self._last_s
        if dt > 0 and self.busy:
            self.busy_s += dt
        for port in self.busy:
            flow = port.flows[0]
            if flow.rate_bps:
                if dt > 0:
                    flow.bits_left -= flow.rate_bps * dt
                if now + flow.bits_left / flow.rate_bps == now:
                    flow.bits_left = 0.0  # less than the clock's resolution is left
        self._last_s = now

    def _update(self) -> None:
        """Finish what is done, divide the airtime, schedule the next event."""
        now = self.env.now
        self._due_now = False
        done: list[tuple[MediumPort, Flow]] = []
        started: list[Flow] = []
        for port in list(self.busy):
            flows = port.flows
            # a head whose bits are all sent is done; an empty one is sent on reaching it
            while flows and flows[0].bits_left <= EPS_BITS:
                flow = flows.pop(0)
                if flow.start_s is None:
                    flow.start_s = now
                    started.append(flow)
                done.append((port, flow))
            if not flows:
                del self.busy[port]
        ports = list(self.busy)
        shares = medium_rates([p.rate_bps for p in ports], self.fairness)
        next_s = math.inf
        for port, share in zip(ports, shares, strict=True):
            head = port.flows[0]
            head.rate_bps = share
            if head.start_s is None:
                head.start_s = now
                started.append(head)
            next_s = min(next_s, head.bits_left / share)
            if share != port._total_bps:
                port._total_bps = share
                if port.on_rate is not None:
                    port.on_rate(share)
        for port, _ in done:
            if port not in self.busy and port._total_bps:
                port._total_bps = 0.0
                if port.on_rate is not None:
                    port.on_rate(0.0)
        if ports:
            self._alarm.set(next_s, self._wake)
        else:
            self._alarm.clear()
        for flow in started:
            if flow.on_start is not None:
                flow.on_start(flow.payload, now)
        for port, flow in done:
            flow.on_finish(flow.payload, flow.start_s, now, port.latency_s)

    def _wake(self) -> None:
        self._advance()
        self._update()
