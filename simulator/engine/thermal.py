"""A node's temperature during a run (lumped RC), and the throttling it triggers.

The node's power is the sum of its units' (idle power plus each running op's increment);
it changes only when an op starts or ends, so the temperature between changes follows
the RC closed form exactly and the next throttle or release instant is computed, not
sampled. When the state flips, the node's DVFS units get a level cap that their
governors respect from the next op start on.
"""

from __future__ import annotations

import itertools
from array import array

import simpy

from simulator.engine.servers import Alarm
from simulator.hardware.thermal import ThermalModel, cap_level_for

#: What a recorded point marks (stored as its index).
EVENTS = ("start", "power", "throttle", "release")
_START, _POWER, _THROTTLE, _RELEASE = range(len(EVENTS))


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
        # (time, temperature, power from then on, event) at t = 0, at every power change
        # (one per instant) and at every throttle/release: between two points the power is
        # constant, so the RC closed form gives the temperature anywhere. Flat doubles, four
        # per point: a busy node records one point per op boundary.
        self._points = array("d", (0.0, self.temperature_c, power_w, _START))
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
        if -1e-9 < self.power_w < 0:  # increments that cancel leave rounding (-2e-16 W)
            self.power_w = 0.0
        now = self.env.now
        points = self._points
        if points[-4] == now and points[-1] <= _POWER:
            points[-2] = self.power_w  # several changes at one instant: the last one holds
        else:
            points.extend((now, self.temperature_c, self.power_w, _POWER))
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
        event = _THROTTLE if self.throttled else _RELEASE
        self._points.extend((now, self.temperature_c, self.power_w, event))
        for state, max_hz in self._dvfs:
            state.cap = cap_level_for(state.table, self.throttled, max_hz)
        self._schedule()

    def series(self, end_s: float) -> list[tuple[float, float, float, bool, str]]:
        """The recorded points up to ``end_s``, closed by an ``end`` point at ``end_s``.

        Alarms may move the node past the end of the energy window (a release while it
        cools after the last op); those points are left out, and the temperature at
        ``end_s`` follows from the last point before it by the RC closed form.
        """
        points = self._points
        kept = []
        throttled = False
        for k in range(0, len(points), 4):
            time_s, temperature_c, power_w, event = points[k : k + 4]
            if time_s > end_s:
                break  # times never decrease
            if event >= _THROTTLE:
                throttled = event == _THROTTLE
            kept.append((time_s, temperature_c, power_w, throttled, EVENTS[int(event)]))
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
