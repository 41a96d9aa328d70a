"""Giving a request's attempt up when a hop times out (``transfer_timeout_ms``).

One job: undo what the attempt holds (flows on links and their radios, queued ops,
buffers in memory) and either drop the request or make its attempt on the fallback
replica (``dispatch: adaptive``). Starting that attempt is the caller's
(:class:`~simulator.engine.dataflow.Dataflow`); the pure observer and predictor are in
:mod:`simulator.engine.offload`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simulator.engine.book import RequestBook
from simulator.engine.ledger import Ledger
from simulator.engine.memory import MemoryGate
from simulator.engine.offload import LinkMonitor
from simulator.engine.state import DONE, App, HopTrack, Request


class Fallback:
    """Timeouts of tracked hops, and what giving an attempt up undoes.

    Parameters
    ----------
    ledger : Ledger
        Buffers the attempt held are freed in it.
    book : RequestBook
        A dropped request is booked there; a fallback attempt replaces the old one.
    monitors : sequence of LinkMonitor
        Told what a timed-out hop delivered (adaptive apps' link estimates).
    on_over : callable(App)
        A request of the app is over (here: dropped); a closed loop may issue again.
    """

    def __init__(
        self,
        ledger: Ledger,
        book: RequestBook,
        monitors: Sequence[LinkMonitor],
        on_over: Callable[[App], None],
    ):
        self.ledger = ledger
        self.book = book
        self.monitors = monitors
        self.on_over = on_over
        #: nodes' pools under ``refuse`` (None: no pool refuses)
        self.memory: MemoryGate | None = None

    def timeout(self, request: Request, track: HopTrack, now: float) -> Request | None:
        """The timeout of ``track`` expired at ``now``: give the attempt up if the hop is
        still unfinished. Returns the fallback attempt to start, if there is one."""
        if request.abandoned:
            return None  # the attempt was already given up
        # a timeout is set only on a tracked hop (Dataflow._start_hop), from the app's
        # transfer timeout: the request tracks its hops and the timeout is a number
        hops, timeout_s = request.hops, request.app.entry.transfer_timeout_s
        assert hops is not None and timeout_s is not None
        if track not in hops:
            return None  # the hop made it
        flow = track.flow
        link, src = track.direction
        reason = f"a hop on link '{link}' from '{src}' was unfinished after {timeout_s * 1e3:g} ms"
        again = self.abandon(request, now, reason)  # cancels the flow: its bits are final
        sent = flow.bits_total - max(flow.bits_left, 0.0) if flow is not None else 0.0
        # what the link delivered to this hop since it was submitted (~0 while it is down)
        for monitor in self.monitors:
            monitor.sample(track.direction, sent / (now - track.submitted_s), now)
        return again

    def abandon(self, request: Request, now: float, reason: str) -> Request | None:
        """Give up the request's attempt: returns its attempt on the fallback replica
        (registered in the book, not started), or None when the request is dropped.

        Undoes what the attempt holds (:meth:`undo`).
        """
        self.undo(request)
        app = request.app
        fallback = app.adaptive.fallback if app.adaptive is not None else None
        if fallback is None:  # not adaptive, or every replica uses the network
            self.book.drop(request, reason)
            self.on_over(app)
            return None
        rep = app.replicas[fallback]
        if app.exits is None:
            again = Request(request.rid, app, rep, request.arrival_s)
        else:  # the same exit on the fallback replica
            again = app.exits.request(request.rid, app, rep, request.arrival_s, request.exit)
        if not (app.failures or app.handover_drops):  # it runs to the end, whatever it takes
            again.hops = again.phase = None
        # else it stays tracked: a failure or a handover may give it up as well (its hops
        # get no timeout: Dataflow._start_hop skips a fallen-back attempt)
        again.fell_back = True
        again.first_start_s = request.first_start_s
        again.energy_j = request.energy_j
        again.device_energy_j = request.device_energy_j
        again.rep.in_flight += 1
        self.book[request.rid] = again
        return again

    def undo(self, request: Request) -> None:
        """Undo what the attempt holds: flows on links (and their radio reservations),
        queued ops, buffers in memory; it is no longer in flight on its replica. Ops
        already running finish (no preemption) and their energy stays booked to the
        request."""
        request.abandoned = True
        hops = request.hops
        # one at a time, oldest first: cancelling a flow or releasing a radio may end or
        # start another hop of this request, which changes ``hops`` under the loop
        while hops:
            track = next(iter(hops))
            del hops[track]
            if track.flow is not None:
                track.channel.cancel(track.flow)
                for radio, _ in track.radios:
                    radio.release()
            # else: the radios are still waking; ``Network.send`` releases them
        for server in request.rep.distinct_servers:
            server.cancel(lambda payload: payload[0] is request)
        plan = request.plan
        # only a tracked attempt is given up (an untracked one runs to the end)
        assert request.phase is not None
        for i, phase in enumerate(request.phase):
            if phase == DONE and request.holders[i] > 0:
                self.ledger.free(plan.units[i], plan.output_bytes[i])
        seen = set()
        for bufs in request.inbufs:
            for buf in bufs or ():
                if id(buf) not in seen and buf.readers > 0:
                    buf.tally.memory_bytes -= buf.nbytes
                seen.add(id(buf))
                buf.readers = 0
        request.rep.in_flight -= 1
        if self.memory is not None:  # its reservation, or its place in the memory queue
            self.memory.release(request)
