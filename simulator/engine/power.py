"""A node's total power during a run, and what listens to it (thermal model, battery).

The node's power is the idle power of its units and radios plus each running op's
increment plus each radio's increment over idle; every change is pushed here, so the
listeners integrate piecewise-constant power exactly.
"""

from __future__ import annotations

import simpy

from simulator.engine.servers import Alarm


class NodePower:
    """Fans a node's power changes out to its listeners (``power_changed(delta_w)``)."""

    __slots__ = ("listeners", "power_w")

    def __init__(self, base_w: float):
        self.power_w = base_w
        self.listeners: list = []

    def changed(self, delta_w: float) -> None:
        if delta_w:
            self.power_w += delta_w
            for listener in self.listeners:
                listener.power_changed(delta_w)


class Battery:
    """A node's battery: drains by the node's power; triggers ``empty`` when it runs out."""

    def __init__(self, env: simpy.Environment, node: str, capacity_j: float, power_w: float):
        self.env = env
        self.node = node
        self.capacity_j = capacity_j
        self.used_j = 0.0
        self.power_w = power_w
        self.empty = env.event()
        self.empty_at_s: float | None = None
        self._since = 0.0
        self._alarm = Alarm(env)
        self._schedule()

    def _advance(self, until_s: float | None = None) -> None:
        now = self.env.now if until_s is None else until_s
        self.used_j += self.power_w * (now - self._since)
        self._since = now

    def power_changed(self, delta_w: float) -> None:
        self._advance()
        self.power_w += delta_w
        self._schedule()

    def _schedule(self) -> None:
        if self.empty.triggered or self.power_w <= 0:
            self._alarm.clear()
            return
        left_s = max(self.capacity_j - self.used_j, 0.0) / self.power_w
        self._alarm.set(left_s, self._drained)

    def _drained(self) -> None:
        if self.empty.triggered:
            return
        self._advance()
        self.used_j = self.capacity_j  # the remaining float dust is the same energy
        self.empty_at_s = self.env.now
        self.empty.succeed(self.node)

    def row(self, end_s: float) -> dict:
        if not self.empty.triggered:
            self._advance(end_s)
        return {
            "node": self.node,
            "capacity_j": self.capacity_j,
            "used_j": self.used_j,
            "remaining_j": max(self.capacity_j - self.used_j, 0.0),
            "empty_at_s": self.empty_at_s,
        }
