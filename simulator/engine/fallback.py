"""Adaptive offloading in the engine: per-request predictions, hop timeouts, and giving
an attempt up (restarting it on the fallback replica, or dropping it).

A mixin of :class:`~simulator.engine.run.Engine`; the pure observer and predictor are in
:mod:`simulator.engine.offload`.
"""

from __future__ import annotations

from simulator.engine.state import DONE, App, HopTrack, Request


class Fallback:
    """Predictions for ``dispatch: adaptive`` and ``transfer_timeout_ms`` (engine mixin)."""

    def _predict(self, app: App, now: float) -> list[float]:
        """Every candidate's objective for a request arriving now, as the app observes it."""
        backlog = {uid: server.backlog_s for uid, server in self.units.items()}
        tails = {(r.link, r.node): r.released_ago_s(now) for r in self.radios}
        awake = {key: ago for key, ago in tails.items() if ago is not None}
        live = {key: c.throughput_bps for key, c in self.links.items() if c.flows}
        return app.adaptive.predict(now, backlog, awake, live)

    def _timeout(self, request: Request, track: HopTrack) -> None:
        if request.abandoned or track not in request.hops:
            return  # the hop made it (or the attempt was already given up)
        now = self.env.now
        flow = track.flow
        link, src = track.direction
        reason = (
            f"a hop on link '{link}' from '{src}' was unfinished after "
            f"{request.app.entry.transfer_timeout_s * 1e3:g} ms"
        )
        self._abandon(request, now, reason)  # cancels the flow: its bits sent are final
        sent = flow.bits_total - max(flow.bits_left, 0.0) if flow is not None else 0.0
        # what the link delivered to this hop since it was submitted (~0 while it is down)
        for monitor in self.monitors:
            monitor.sample(track.direction, sent / (now - track.submitted_s), now)

    def _abandon(self, request: Request, now: float, reason: str) -> None:
        """Give up the request's attempt: restart it on the fallback, or drop it.

        Undoes what the attempt holds: flows on links (and their radio reservations),
        queued ops, buffers in memory. Ops already running finish (no preemption) and
        their energy stays booked to the request. An adaptive app restarts the request
        from its input on its fallback replica; any other app drops it with ``reason``.
        """
        request.abandoned = True
        for track in request.hops:
            if track.flow is not None:
                track.channel.cancel(track.flow)
                for radio, _ in track.radios:
                    radio.release()
            # else: the radios are still waking; ``connected`` releases them
        request.hops.clear()
        for server in request.rep.distinct_servers:
            server.cancel(lambda payload: payload[0] is request)
        plan = request.plan
        for i, phase in enumerate(request.phase):
            if phase == DONE and request.holders[i] > 0:
                self.ledger.free(plan.units[i], plan.output_bytes[i], now)
        seen = set()
        for bufs in request.inbufs:
            for buf in bufs or ():
                if id(buf) not in seen and buf[0] > 0:
                    self.ledger.free(buf[2], buf[1], now)
                seen.add(id(buf))
                buf[0] = 0
        request.rep.in_flight -= 1
        app = request.app
        if app.adaptive is None:
            self.requests.drop(request, reason)
            self._free_slot(app)
            return
        again = Request(request.rid, app, app.replicas[app.adaptive.fallback], request.arrival_s)
        again.hops = again.phase = None  # the fallback runs to the end, whatever it takes
        again.fell_back = True
        again.first_start_s = request.first_start_s
        again.energy_j = request.energy_j
        again.device_energy_j = request.device_energy_j
        again.rep.in_flight += 1
        self.requests[request.rid] = again
        for move in again.rep.input_moves:
            self._start_move(again, move, now)
