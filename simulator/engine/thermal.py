"""A node's temperature during a run (lumped RC), and the throttling it triggers.

The node's power is the sum of its units' (idle power plus each running op's increment);
it changes only when an op starts or ends, so the temperature between changes follows
the RC closed form exactly and the next throttle or release instant is computed, not
sampled. When the state flips, the node's DVFS units get a level cap that their
governors respect from the next op start on.
"""

from __future__ import annotations

import simpy

from simulator.engine.servers import Alarm
from simulator.hardware.thermal import ThermalModel, cap_level_for


class NodeThermal:
    """Temperature, power and throttling state of one node."""

    def __init__(
        self, env: simpy.Environment, node: str, model: ThermalModel, power_w: float, dvfs
    ):
        self.env = env
        self.node = node
        self.model = model
        self.power_w = power_w
        self.temperature_c = model.ambient_c
        self.max_temperature_c = model.ambient_c
        self.throttled = False
        self.throttled_s = 0.0
        self.first_throttle_s: float | None = None
        self._since = 0.0
        self._throttled_since = 0.0
        self._alarm = Alarm(env)
        self._dvfs = dvfs  # [(DvfsState, throttled max frequency in Hz)]
        self._schedule()

    def _advance(self, until_s: float | None = None) -> None:
        now = self.env.now if until_s is None else until_s
        if now > self._since:
            self.temperature_c = self.model.temperature_after(
                self.temperature_c, self.power_w, now - self._since
            )
            self.max_temperature_c = max(self.max_temperature_c, self.temperature_c)
            self._since = now

    def power_changed(self, delta_w: float) -> None:
        """The node's power moved by ``delta_w`` now."""
        self._advance()
        self.power_w += delta_w
        self._schedule()

    def _schedule(self) -> None:
        wait_s = self.model.time_to_transition_s(self.temperature_c, self.power_w, self.throttled)
        if wait_s != float("inf"):
            self._alarm.set(wait_s, self._flip)
        else:
            self._alarm.clear()

    def _flip(self) -> None:
        self._advance()
        now = self.env.now
        self.throttled = not self.throttled
        if self.throttled:
            self._throttled_since = now
            if self.first_throttle_s is None:
                self.first_throttle_s = now
        else:
            self.throttled_s += now - self._throttled_since
        for state, max_hz in self._dvfs:
            state.cap = cap_level_for(state.table, self.throttled, max_hz)
        self._schedule()

    def finish(self, end_s: float) -> dict:
        """The node's thermal row at the end of the run."""
        self._advance(end_s)
        throttled_s = self.throttled_s + (end_s - self._throttled_since if self.throttled else 0.0)
        return {
            "node": self.node,
            "throttled_s": throttled_s,
            "first_throttle_s": self.first_throttle_s,
            "max_temperature_c": self.max_temperature_c,
            "final_temperature_c": self.temperature_c,
        }
