"""Handovers of mobile links: what happens to the transfers under way (docs/mobility.md).

The capacity side of a handover needs nothing here: a mobile link's rate trace and its
interruptions are its bandwidth trace and outages (``Link.coverage``,
:mod:`simulator.network.mobility`), which the link's channels already follow. At each
handover this component looks at the flows of both directions that have sent part of
their bits (a flow still queued, or whose radios are still waking, has sent nothing and
simply goes through the new access point):

* ``resend``: the flow starts again from its first bit (the old access point's buffer is
  lost); it waits out the interruption like any flow during an outage;
* ``drop``: the request's attempt is given up (:meth:`Fallback.abandon`): an adaptive app
  redoes it on its fallback replica, any other app's request is dropped with the reason.

Every request touched gets a note (the ``handover`` column of the ``requests`` table).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import simpy

from simulator.engine.fallback import Fallback
from simulator.engine.links import FluidLink
from simulator.engine.medium import MediumPort
from simulator.engine.servers import call_later
from simulator.engine.state import Request
from simulator.errors import SimulationError
from simulator.network.mobility import Coverage, Handover
from simulator.network.topology import Link
from simulator.platform import Platform


def mobile_links(platform: Platform) -> list[Link]:
    """The links whose capacity comes from a mobility model."""
    return [link for link in platform.network.links.values() if link.coverage is not None]


def drops_on_handover(platform: Platform) -> bool:
    """Whether a handover may drop attempts (requests must then track their hops)."""
    return any(_coverage(link).in_flight == "drop" for link in mobile_links(platform))


def _coverage(link: Link) -> Coverage:
    if link.coverage is None:
        raise SimulationError(f"link '{link.name}' has no mobility")
    return link.coverage


class Handovers:
    """Schedules every mobile link's handovers and applies its in-flight policy.

    Parameters
    ----------
    env : simpy.Environment
    platform : Platform
    channels : dict of (link, src node) -> FluidLink
        The run's link directions.
    fallback : Fallback
        Gives a dropped attempt up.
    restart : callable(Request, now)
        Starts the fallback attempt of an adaptive app.
    """

    def __init__(
        self,
        env: simpy.Environment,
        platform: Platform,
        channels: Mapping[tuple[str, str], FluidLink | MediumPort],
        fallback: Fallback,
        restart: Callable[[Request, float], None],
    ):
        self.env = env
        self.channels = channels
        self.fallback = fallback
        self.restart = restart
        #: request id -> what handovers did to it, in time order
        self.notes: dict[int, list[str]] = {}
        #: (time_s, link, from, to, resent, dropped) per handover that happened
        self.events: list[tuple[float, str, str, str, int, int]] = []
        for link in mobile_links(platform):
            for handover in _coverage(link).handovers:
                call_later(env, handover.time_s, self._fire_at(link, handover))

    def _fire_at(self, link: Link, handover: Handover) -> Callable[[], None]:
        return lambda: self._fire(link, handover)

    def _fire(self, link: Link, handover: Handover) -> None:
        now = self.env.now
        what = (
            f"handover of link '{link.name}' from {handover.from_ap} to {handover.to_ap} "
            f"at {now:g} s"
        )
        resent = dropped = 0
        for src in (link.a, link.b):
            channel = self.channels[(link.name, src)]
            if not isinstance(channel, FluidLink):  # the schema allows mobility on these only
                raise SimulationError(f"mobile link '{link.name}' is not point to point")
            channel.advance()  # bring every flow's bits sent up to now
            for flow in list(channel.flows):
                if flow.start_s is None or flow.bits_left >= flow.bits_total:
                    continue  # nothing sent yet: it goes through the new access point
                if flow.bits_left <= 1e-6:
                    continue  # sent: the channel finishes it at this instant
                request = flow.payload[0]  # Dataflow's hop payload: (request, ...)
                if request.abandoned:
                    continue
                if _coverage(link).in_flight == "resend":
                    channel.restart(flow)
                    self._note(request, f"resent: {what}")
                    resent += 1
                    continue
                reason = f"{what} interrupted a transfer under way"
                again = self.fallback.abandon(request, now, reason)
                dropped += 1
                if again is None:
                    self._note(request, f"dropped: {what}")
                else:
                    self._note(request, f"dropped, redone on replica {again.rep.index}: {what}")
                    self.restart(again, now)
        self.events.append((now, link.name, handover.from_ap, handover.to_ap, resent, dropped))

    def _note(self, request: Request, text: str) -> None:
        self.notes.setdefault(request.rid, []).append(text)
