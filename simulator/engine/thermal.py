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
        self.first_throttle_s: float | None = None
        self._since = 0.0
        # State when the power last changed: the run may go on past the window's end (a
        # pending release alarm fires while the node idles), so finish() recomputes the
        # row at the window's end from here rather than reading the later state.
        self._changed = (0.0, self.temperature_c, self.max_temperature_c)
        self._flips: list[float] = []
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
        self._changed = (self.env.now, self.temperature_c, self.max_temperature_c)
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
        self._flips.append(now)
        if self.throttled and self.first_throttle_s is None:
            self.first_throttle_s = now
        for state, max_hz in self._dvfs:
            state.cap = cap_level_for(state.table, self.throttled, max_hz)
        self._schedule()

    def finish(self, end_s: float) -> dict:
        """The node's thermal row at the end of the run's window (``end_s``).

        Power is constant after its last change, so the temperature at ``end_s`` follows
        from that instant by the closed form, whatever alarms fired later; throttling
        intervals are clipped to the window.
        """
        changed_s, temperature_c, max_c = self._changed
        if end_s >= changed_s:
            temperature_c = self.model.temperature_after(
                temperature_c, self.power_w, end_s - changed_s
            )
            max_c = max(max_c, temperature_c)  # monotone between power changes
        else:  # a power change after the window's end: report the state as it stands
            self._advance(end_s)
            temperature_c, max_c = self.temperature_c, self.max_temperature_c
        # flips alternate on, off, on, ...: pair them and clip each interval to the window
        starts, stops = self._flips[0::2], [*self._flips[1::2], end_s]
        throttled_s = sum(
            max(0.0, min(stop, end_s) - start) for start, stop in zip(starts, stops, strict=False)
        )
        first = self.first_throttle_s
        return {
            "node": self.node,
            "throttled_s": throttled_s,
            "first_throttle_s": first if first is not None and first <= end_s else None,
            "max_temperature_c": max_c,
            "final_temperature_c": temperature_c,
        }
