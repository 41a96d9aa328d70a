"""Link directions as fluid channels: bandwidth that changes over time, shared by flows.

A channel's capacity is a step function of time (a constant, a bandwidth trace, zero
during outages). Flows share it by ``fifo`` (the oldest flow gets everything, the way a
single queue serialises) or ``fair`` (processor sharing: ``n`` flows get ``capacity / n``
each). Between events every rate is constant, so the bits sent are integrated exactly;
the channel reschedules its next event (a flow's completion or a capacity step) whenever
flows or capacity change, replacing the pending one (an :class:`~simulator.engine.servers.Alarm`).

A stochastic link's direction also has a
:class:`~simulator.network.impairments.DirectionImpairments`: its capacity may be drawn
from a distribution (generated lazily as time advances), a flow's bits are inflated at
submit by the retransmissions its lost packets need, and its delay after the last bit is
drawn when it finishes (latency + jitter + a round trip per retransmission round).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import simpy

from simulator.engine.servers import Alarm
from simulator.network.capacity import StepCapacity
from simulator.network.impairments import DirectionImpairments

#: bits left under which a flow counts as complete (absorbs float rounding)
EPS_BITS = 1e-6


class Flow:
    """One transfer on a fluid link or a shared medium: bits left, its current rate and
    the callbacks its link calls when it starts and finishes (medium.py and state.py
    hold them too, hence public)."""

    __slots__ = (
        "bits_left",
        "bits_total",
        "on_finish",
        "on_start",
        "payload",
        "rate_bps",
        "rounds",
        "start_s",
    )

    def __init__(self, bits, on_start, on_finish, payload, rounds=1):
        self.bits_total = bits
        self.bits_left = bits
        self.on_start = on_start
        self.on_finish = on_finish
        self.payload = payload
        self.rate_bps = 0.0
        self.start_s = None
        self.rounds = rounds  # transmission rounds its packets need (1: nothing lost)


class FluidLink:
    """One direction of a link.

    Parameters
    ----------
    env : simpy.Environment
    name : str
    steps : sequence of (time_s, bandwidth_bps)
        Capacity from each time on (the first applies from t = 0); 0 during outages.
    sharing : str
        ``fifo`` or ``fair``.
    on_rate : callable(total_bps) or None
        Told the total throughput in use after every change (radios draw power by it).
    latency_s : float
        Propagation delay after a flow's last bit (the link's one-way latency).
    impairments : DirectionImpairments or None
        Random capacity, jitter and loss of a stochastic link's direction.
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        steps: Sequence[tuple[float, float]],
        sharing: str = "fifo",
        on_rate: Callable[[float], None] | None = None,
        latency_s: float = 0.0,
        impairments: DirectionImpairments | None = None,
    ):
        self.env = env
        self.name = name
        self.latency_s = latency_s
        self.impairments = impairments
        self.capacity = StepCapacity(steps) if impairments is None else impairments.capacity(steps)
        self.sharing = sharing
        self.on_rate = on_rate
        self.flows: list[Flow] = []
        self._last_s = 0.0
        self._alarm = Alarm(env)
        self._total_bps = 0.0

    @property
    def throughput_bps(self) -> float:
        """Bit/s the direction carries now, all flows together (0 while it is down)."""
        return self._total_bps

    @property
    def updated_s(self) -> float:
        """When the flows' bit counts were last brought up to date (s): since then each
        has sent at its current rate."""
        return self._last_s

    def submit(self, bits: float, on_start, on_finish, payload: Any) -> Flow:
        """Start a flow of ``bits``; ``on_start(payload, t)`` when it first gets bandwidth,
        ``on_finish(payload, start_s, end_s, delay_s)`` when its last bit is sent, with
        the delay until it is delivered at the other end. Returns the flow, a handle for
        :meth:`cancel`."""
        self._advance()
        rounds = 1
        if self.impairments is not None:
            bits, rounds = self.impairments.inflate(float(bits))
        flow = Flow(float(bits), on_start, on_finish, payload, rounds)
        self.flows.append(flow)
        self._update()
        return flow

    def cancel(self, flow: Flow) -> float:
        """Withdraw an unfinished flow (its sender gave up); returns the bits it had sent.

        The others share the capacity from now on; ``on_finish`` is never called.
        """
        self._advance()
        self.flows.remove(flow)
        self._update()
        return flow.bits_total - max(flow.bits_left, 0.0)

    def advance(self) -> None:
        """Count the bits every flow has sent up to now (the rates do not change)."""
        self._advance()

    def restart(self, flow: Flow) -> None:
        """Send ``flow`` again from its first bit: what it had sent is lost (a handover)."""
        self._advance()
        flow.bits_left = flow.bits_total
        self._update()

    # -- the fluid model -----------------------------------------------------------------
    def _advance(self) -> None:
        now = self.env.now
        dt = now - self._last_s
        for flow in self.flows:
            if flow.rate_bps:
                if dt > 0:
                    flow.bits_left -= flow.rate_bps * dt
                if now + flow.bits_left / flow.rate_bps == now:
                    # what is left takes less than the clock's resolution at `now`: the
                    # wake-up could not move time on (a 10 Gbit/s link at t = 2 s left
                    # 2e-6 bits, 1e-16 s, forever), so the flow is done now
                    flow.bits_left = 0.0
        self._last_s = now

    def _update(self) -> None:
        """Finish what is done, share the capacity, schedule the next event."""
        now = self.env.now
        capacity = self.capacity.at(now)
        done = [f for f in self.flows if f.bits_left <= EPS_BITS and f.start_s is not None]
        zero = [f for f in self.flows if f.bits_left <= EPS_BITS and f.start_s is None]
        for flow in zero:  # an empty flow is sent the moment it may start (link up)
            if capacity > 0 and (self.sharing == "fair" or flow is self.flows[0]):
                flow.start_s = now
                done.append(flow)
        zero = [f for f in zero if f in done]
        if done:
            self.flows = [f for f in self.flows if f not in done]
        active = self.flows if self.sharing == "fair" else self.flows[:1]
        share = capacity / len(active) if active else 0.0
        started = []
        for flow in self.flows:
            flow.rate_bps = share if flow in active else 0.0
            if flow.rate_bps > 0 and flow.start_s is None:
                flow.start_s = now
                started.append(flow)
        total = share * len(active)
        if total != self._total_bps and self.on_rate is not None:
            self.on_rate(total)
        self._total_bps = total
        next_s = self.capacity.next_change_after(now) - now
        for flow in active:
            if flow.rate_bps > 0:
                next_s = min(next_s, flow.bits_left / flow.rate_bps)
        if self.flows and math.isfinite(next_s):
            self._alarm.set(next_s, self._wake)
        else:
            self._alarm.clear()
        for flow in started:
            if flow.on_start is not None:
                flow.on_start(flow.payload, now)
        for flow in done:
            if flow.on_start is not None and flow in zero:
                flow.on_start(flow.payload, now)
            impaired = self.impairments
            delay_s = self.latency_s if impaired is None else impaired.delay_s(now, flow.rounds)
            flow.on_finish(flow.payload, flow.start_s, now, delay_s)

    def _wake(self) -> None:
        self._advance()
        self._update()
