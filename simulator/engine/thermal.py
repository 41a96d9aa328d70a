"""A node's temperature during a run (lumped RC), and the throttling it triggers.

The node's power is the sum of its units' (idle power plus each running op's increment);
it changes only when an op starts or ends, so the temperature between changes follows
the RC closed form exactly and the next throttle or release instant is computed, not
sampled. When the state flips, the node's DVFS units get a level cap that their
governors respect from the next op start on.
"""

from __future__ import annotations

import itertools

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
        self.throttled = False
        self._since = 0.0
        self._alarm = Alarm(env)
        self._dvfs = dvfs  # [(DvfsState, throttled max frequency in Hz)]
        # (time, temperature, power from then on, throttled, event) at t = 0, at every
        # power change (one per instant) and at every throttle/release: between two points
        # the power is constant, so the RC closed form gives the temperature anywhere
        self.points: list[tuple[float, float, float, bool, str]] = [
            (0.0, self.temperature_c, power_w, False, "start")
        ]
        self._schedule()

    def _advance(self) -> None:
        now = self.env.now
        if now > self._since:
            self.temperature_c = self.model.temperature_after(
                self.temperature_c, self.power_w, now - self._since
            )
            self._since = now

    def power_changed(self, delta_w: float) -> None:
        """The node's power moved by ``delta_w`` now."""
        self._advance()
        self.power_w += delta_w
        now = self.env.now
        points = self.points
        event = "power"
        if points[-1][0] == now and points[-1][4] in ("power", "start"):
            # several changes at one instant: one point, with the power after the last
            event = points.pop()[4]
        points.append((now, self.temperature_c, self.power_w, self.throttled, event))
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
        self.points.append(
            (
                now,
                self.temperature_c,
                self.power_w,
                self.throttled,
                "throttle" if self.throttled else "release",
            )
        )
        for state, max_hz in self._dvfs:
            state.cap = cap_level_for(state.table, self.throttled, max_hz)
        self._schedule()

    def series(self, end_s: float) -> list[tuple[float, float, float, bool, str]]:
        """The recorded points up to ``end_s``, closed by an ``end`` point at ``end_s``.

        Alarms may move the node past the end of the energy window (a release while it
        cools after the last op); those points are left out, and the temperature at
        ``end_s`` follows from the last point before it by the RC closed form.
        """
        kept = [p for p in self.points if p[0] <= end_s]
        time_s, temperature_c, power_w, throttled, _ = kept[-1]
        final_c = self.model.temperature_after(temperature_c, power_w, end_s - time_s)
        return [*kept, (end_s, final_c, power_w, throttled, "end")]

    def finish(self, end_s: float) -> dict:
        """The node's thermal row at the end of the run (the energy window's end)."""
        points = self.series(end_s)
        throttled_s = 0.0
        first_throttle_s = None
        for (a, _, _, throttled, event), (b, *_) in itertools.pairwise(points):
            if throttled:
                throttled_s += b - a
            if event == "throttle" and first_throttle_s is None:
                first_throttle_s = a
        # between points the temperature moves monotonically towards a steady state, so
        # its maximum is at a point
        return {
            "node": self.node,
            "throttled_s": throttled_s,
            "first_throttle_s": first_throttle_s,
            "max_temperature_c": max(p[1] for p in points),
            "final_temperature_c": points[-1][1],
        }
