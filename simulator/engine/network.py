"""The engine's network: every link direction as a fluid channel, and the device radios.

One job: carry a request's tensor over one hop. :meth:`Network.send` wakes the device
radios the hop uses (a promotion may take time), puts the bits on the link direction's
channel once every radio is connected, and when the last bit is sent releases the radios
and calls back with the delay until the bits arrive at the other end. What a hop means
for the request (its next hop, its arrival, its timeout) is the caller's.

A download (a hop whose only device radio receives: ``Hop.lead_s``) pays the link's
propagation latency *first*: the bytes reach the phone's side one latency after the
server sends, and that is when the phone's radio is asked to connect (a promotion, if it
is idle or in a tail stage that needs one), receives at the link's rate, and starts its
tail when the last bytes are in, not one latency before (what remains after the last
bit is the jitter and retransmission delay). An upload keeps the order radio, bits,
propagation: the phone's radio is done when its last bit has left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import simpy

from simulator.engine.links import FluidLink
from simulator.engine.medium import MediumPort, SharedMedium
from simulator.engine.radio import RadioState
from simulator.engine.servers import call_later
from simulator.engine.state import HopTrack, RadioRates
from simulator.errors import SocsimError
from simulator.network.impairments import impairments_for
from simulator.network.topology import BITS_PER_BYTE
from simulator.platform import Platform

#: A direction of a link: (link name, sending node).
Direction = tuple[str, str]
#: ``on_sent(payload, start_s, end_s, delay_s)``: the hop's last bit is sent.
OnSent = Callable[[Any, float, float, float], None]


class Network:
    """Link directions and device radios of one run.

    Parameters
    ----------
    env : simpy.Environment
    platform : Platform
    seed, replicate : int
        Every stochastic link direction draws from its own stream of (seed, replicate).
    node_down : mapping of node -> down intervals (s), optional
        Failed nodes: every link that ends at one has an outage while it is down (the
        link's own outage rule, :meth:`~simulator.network.topology.Link.capacity_steps`).
    """

    __slots__ = ("env", "hop_radios", "lead_s", "links", "radios")

    def __init__(
        self,
        env: simpy.Environment,
        platform: Platform,
        seed: int,
        replicate: int,
        node_down: Mapping[str, tuple[tuple[float, float], ...]] | None = None,
    ):
        self.env = env
        #: every device-end radio, in link order (the ``radios`` table's order)
        self.radios: list[RadioState] = []
        #: per direction, the radios it uses: (radio, True when the radio sends)
        self.hop_radios: dict[Direction, tuple[tuple[RadioState, bool], ...]] = {}
        for link in platform.network.links.values():
            ends = {}
            if link.radio is not None:
                for end in (link.a, link.b):
                    if platform.role_of(end) == "device":
                        ends[end] = RadioState(env, link.name, end, link.radio)
                        self.radios.append(ends[end])
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                self.hop_radios[(link.name, src)] = tuple(
                    (ends[n], n == src) for n in (src, dst) if n in ends
                )
        #: per direction, the latency paid before the bits enter the channel: the link's
        #: latency on a download (only receiving device radios), else 0
        self.lead_s: dict[Direction, float] = {
            direction: (
                platform.network.links[direction[0]].latency_s
                if radios and not any(sending for _, sending in radios)
                else 0.0
            )
            for direction, radios in self.hop_radios.items()
        }
        self.links: dict[Direction, FluidLink | MediumPort] = {}
        media: dict[str, SharedMedium] = {}
        node_down = node_down or {}
        for link in platform.network.links.values():
            down = (*node_down.get(link.a, ()), *node_down.get(link.b, ()))
            stepped = replace(link, outages=(*link.outages, *down)) if down else link
            for src, dst in ((link.a, link.b), (link.b, link.a)):
                radios = self.hop_radios[(link.name, src)]
                if link.medium:  # a station's link: its directions share the airtime
                    if down:
                        raise SocsimError(
                            f"failures: link '{link.name}' ends at a node that fails, but it "
                            f"is on shared medium '{link.medium}', whose links cannot be cut "
                            "yet; fail a unit of the node instead, or take the link off the "
                            "medium"
                        )
                    medium = media.get(link.medium)
                    if medium is None:
                        medium = media[link.medium] = SharedMedium(env, link.medium, link.fairness)
                    self.links[(link.name, src)] = medium.port(
                        f"{link.name}:{src}->{dst}",
                        link.bandwidth_from(src),
                        RadioRates(radios) if radios else None,
                        link.latency_s - self.lead_s[(link.name, src)],
                    )
                    continue
                self.links[(link.name, src)] = FluidLink(
                    env,
                    f"{link.name}:{src}->{dst}",
                    stepped.capacity_steps(src),
                    link.sharing,
                    RadioRates(radios) if radios else None,
                    # what follows the last bit: on a download, the latency was paid first
                    link.latency_s - self.lead_s[(link.name, src)],
                    impairments_for(link, src, seed, replicate, self.lead_s[(link.name, src)]),
                )

    def send(
        self,
        direction: Direction,
        nbytes: int,
        on_sent: OnSent,
        payload: Any,
        track: HopTrack | None,
        given_up: Callable[[], bool],
    ) -> None:
        """Send ``nbytes`` over ``direction`` once its device radios are connected.

        ``on_sent(payload, start_s, end_s, delay_s)`` is called when the last bit is sent
        (the radios are released by then). ``track``, when given, receives the flow (a
        handle to cancel it). ``given_up()`` is asked when the radios are connected: true,
        the sender gave up while they woke, and they are released at once.

        On a download (``lead_s[direction] > 0``) the radios are asked that long after
        the call (when the first bytes reach the device), unless the sender gave up by
        then, and ``delay_s`` is only what follows the last bit beyond the latency (the
        link direction was built with the rest: jitter, retransmission round trips).
        """
        lead_s = self.lead_s[direction]
        if lead_s > 0:

            def reached() -> None:  # the first bytes are at the device's end of the link
                if not given_up():
                    self._send(direction, nbytes, on_sent, payload, track, given_up)

            call_later(self.env, lead_s, reached)
            return
        self._send(direction, nbytes, on_sent, payload, track, given_up)

    def _send(
        self,
        direction: Direction,
        nbytes: int,
        on_sent: OnSent,
        payload: Any,
        track: HopTrack | None,
        given_up: Callable[[], bool],
    ) -> None:
        channel = self.links[direction]
        radios = self.hop_radios[direction]
        bits = nbytes * BITS_PER_BYTE
        if not radios:
            flow = channel.submit(bits, None, on_sent, payload)
            if track is not None:
                track.flow = flow
            return
        pending = len(radios)

        def connected() -> None:  # every device radio on the hop is ready (promoted)
            nonlocal pending
            pending -= 1
            if pending:
                return
            if given_up():
                for radio, _ in radios:
                    radio.release()
                return
            flow = channel.submit(bits, None, on_sent, payload)
            if track is not None:
                track.flow = flow

        for radio, _ in radios:
            radio.connect(connected)

    def release(self, direction: Direction) -> None:
        """A hop of ``direction`` is sent: its radios may start their tails."""
        for radio, _ in self.hop_radios[direction]:
            radio.release()

    def conditions(self, now: float) -> tuple[dict, dict]:
        """What an adaptive app observes now: (radios awake -> s since their tail began,
        directions carrying flows -> their throughput in bit/s)."""
        tails = {(r.link, r.node): r.released_ago_s(now) for r in self.radios}
        awake = {key: ago for key, ago in tails.items() if ago is not None}
        live = {key: c.throughput_bps for key, c in self.links.items() if c.flows}
        return awake, live

    def busy(self) -> bool:
        """Whether any radio is not idle (connected, promoting or in a tail)."""
        return any(radio.busy for radio in self.radios)

    def last_change_s(self) -> float:
        """The last instant any radio changed state (0 without radios)."""
        return max((r.last_change_s for r in self.radios), default=0.0)
