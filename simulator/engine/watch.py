"""Power watching for the engine: node power fanned out to thermal models and
batteries, the stop when a battery is empty, and the end of a battery run.

A mixin of :class:`~simulator.engine.run.Engine`: the methods use its units, radios,
DVFS states, requests and ledger.
"""

from __future__ import annotations

from simulator.engine.power import Battery, NodePower
from simulator.engine.thermal import NodeThermal


class PowerWatch:
    """Node power, thermal throttling and batteries during a run (engine mixin)."""

    def _watch_power(self, platform) -> None:
        """Node power for the nodes whose thermal model or battery listens to it."""
        self.thermal: dict[str, NodeThermal] = {}
        self.batteries: dict[str, Battery] = {}
        self.unit_power: dict[str, tuple[NodePower, float]] = {}
        # (request id, op) -> (unit, start s, power increment W, the attempt running it)
        self.running: dict[tuple[int, int], tuple] = {}
        self.stopped_at_s: float | None = None
        self.stop_reason = ""
        for node in platform.nodes.values():
            if node.thermal is None and node.battery_j is None:
                continue
            radios = [r for r in self.radios if r.node == node.name]
            power = NodePower(sum(u.idle_w for u in node.units) + sum(r.power_w() for r in radios))
            if node.thermal is not None:
                caps = [
                    (self.dvfs[f"{node.name}.{u.name}"], u.throttled_max_hz or 0.0)
                    for u in node.units
                    if u.dvfs is not None
                ]
                self.thermal[node.name] = NodeThermal(
                    self.env, node.name, node.thermal, power.power_w, caps
                )
                power.listeners.append(self.thermal[node.name])
            if node.battery_j is not None:
                self.batteries[node.name] = Battery(
                    self.env, node.name, node.battery_j, power.power_w
                )
                power.listeners.append(self.batteries[node.name])
            for u in node.units:
                self.unit_power[f"{node.name}.{u.name}"] = (power, u.active_w - u.idle_w)
            for radio in radios:
                radio.power_listener = power

    def _stop_on_empty_battery(self) -> None:
        """A battery ran out: the run ends now; what was in flight is dropped."""
        now = self.env.now
        self.stopped_at_s = now
        empty = sorted(n for n, b in self.batteries.items() if b.empty.triggered)
        self.stop_reason = f"battery of {', '.join(empty)} empty at {now:.6g} s"
        # each running op's own attempt (not the book's current one, which a fallback
        # may have replaced, or trace none released)
        for (_rid, i), (uid, start_s, _, request) in self.running.items():
            plan = request.plan
            at_level = request.op_energy[i] if request.op_energy is not None else None
            busy_w = (
                at_level[2] if at_level is not None else self.scenario.platform.unit(uid).active_w
            )
            self.ledger.partial_op(uid, start_s, now, plan.core_share[i], busy_w)

    def _check_over(self) -> None:
        """Trigger :attr:`_over` once nothing more can happen but idling."""
        if self._over.triggered or any(source.is_alive for source in self._sources):
            return
        if any(rep.in_flight for app in self.apps for rep in app.replicas):
            return
        if any(radio.busy for radio in self.radios):
            return
        self._over.succeed()
