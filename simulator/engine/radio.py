"""The state of one radio (a device end of a link) during a run, with exact energy.

States: ``idle`` → (first transfer) ``promotion`` → ``connected`` → (last transfer done)
the tail stages in turn (``tail`` for ``rrc``; e.g. ``tail_dch`` then ``fach`` for
``rrc_stages``) → ``idle``. A transfer that starts in a tail stage stops the tail and
pays that stage's promotion (none for LTE's tail, FACH -> DCH for UMTS); one that starts
in idle pays the radio's promotion. A ``constant`` radio has no promotion and no tail.
Power is piecewise constant between state changes and throughput changes, so energy is
integrated exactly at every change and the intervals are kept for the ``radio_states``
table.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import simpy

from simulator.engine.clock import after
from simulator.engine.power import NodePower
from simulator.engine.servers import Alarm
from simulator.network.radio import Radio

IDLE, PROMOTION, CONNECTED = "idle", "promotion", "connected"
_RATE_EPS_BPS = 1e-3


class RadioState:
    """One radio's state machine.

    Parameters
    ----------
    env : simpy.Environment
    link, node : str
        The link and the device node the radio belongs to.
    radio : Radio
    """

    def __init__(self, env: simpy.Environment, link: str, node: str, radio: Radio):
        self.env = env
        self.link = link
        self.node = node
        self.radio = radio
        self.state = IDLE
        self.reserved = 0  # transfers connected (queued or serialising) on this radio
        self.up_bps = 0.0
        self.down_bps = 0.0
        self._stage: int | None = None  # index of the tail stage the radio is in
        self.released_s: float | None = None  # when the tail began (while in a tail stage)
        self._promotion_w = 0.0  # power of the promotion under way (it depends on whence)
        self._waiting: list[Callable[[], None]] = []
        self._tail = Alarm(env)
        self._since = 0.0
        self.intervals: list[tuple[str, float, float, float]] = []  # state, start, end, W
        # the node's NodePower, when something watches it
        self.power_listener: NodePower | None = None
        self.on_idle: Callable[[], None] | None = None  # told when the radio goes idle

    # -- power bookkeeping -----------------------------------------------------------------
    def power_w(self) -> float:
        radio = self.radio
        if self._stage is not None:
            return radio.tail[self._stage].power_w
        if self.state == IDLE:
            return radio.idle_w
        if self.state == PROMOTION:
            return self._promotion_w
        if not radio.stateful and self.up_bps == 0 and self.down_bps == 0:
            return radio.idle_w
        return radio.connected_power_w(self.up_bps, self.down_bps)

    def _change(self, update: Callable[[], None]) -> None:
        """Close the current constant-power interval, then apply ``update``."""
        self.close(self.env.now)
        if self.power_listener is None:
            update()
            return
        before = self.power_w()
        update()
        self.power_listener.changed(self.power_w() - before)

    def _enter(self, state: str, stage: int | None = None, promotion_w: float = 0.0) -> None:
        def update() -> None:
            self.state, self._stage, self._promotion_w = state, stage, promotion_w

        self._change(update)
        if state == IDLE and self.on_idle is not None:
            self.on_idle()

    @property
    def busy(self) -> bool:
        """True unless the radio is idle (connected, promoting or in a tail)."""
        return self.state != IDLE

    def close(self, end_s: float) -> None:
        """Record the current constant-power interval up to ``end_s``."""
        if end_s > self._since:
            self.intervals.append((self.state, self._since, end_s, self.power_w()))
            self._since = end_s

    def energy_by_state(self, start_s: float, end_s: float) -> dict[str, float]:
        """Energy (J) per state within the window [start_s, end_s] (after :meth:`close`).

        Keys: ``idle``, ``promotion``, ``connected`` and every tail stage's name.
        """
        states = (IDLE, PROMOTION, CONNECTED, *(s.state for s in self.radio.tail))
        energy = dict.fromkeys(states, 0.0)
        for state, a, b, power in self.intervals:
            overlap = min(b, end_s) - max(a, start_s)
            if overlap > 0:
                energy[state] += power * overlap
        return energy

    # -- transfers ---------------------------------------------------------------------------
    def connect(self, then: Callable[[], None]) -> None:
        """Call ``then`` once the radio can carry a transfer (after a promotion if needed)."""
        self.reserved += 1
        if self.state == PROMOTION:
            self._waiting.append(then)
            return
        if self.state == CONNECTED:
            then()
            return
        if not self.radio.stateful:  # constant: idle -> connected at once
            self._enter(CONNECTED)
            then()
            return
        delay_s, power_w = self.radio.promotion(self._stage)
        self._tail.clear()  # a pending move to the next tail stage (or idle) is void
        if delay_s > 0:
            self._waiting.append(then)
            self._enter(PROMOTION, promotion_w=power_w)
            after(self.env, delay_s, self._promoted)
            return
        self._enter(CONNECTED)
        then()

    def _promoted(self, _event) -> None:
        self._enter(CONNECTED)
        waiting, self._waiting = self._waiting, []
        for then in waiting:
            then()

    def flow(self, up_bps: float, down_bps: float) -> None:
        """A transfer started (+) or ended (-) serialising at these rates."""

        def update() -> None:
            # rates arrive as deltas; snap float residue (far below 1 bit/s) back to zero
            up, down = self.up_bps + up_bps, self.down_bps + down_bps
            self.up_bps = up if up > _RATE_EPS_BPS else 0.0
            self.down_bps = down if down > _RATE_EPS_BPS else 0.0

        self._change(update)

    def release(self) -> None:
        """A connected transfer is done; the last one starts the tail (or goes idle)."""
        self.reserved -= 1
        if self.reserved:
            return
        if not self.radio.stateful:
            self._enter(IDLE)
            return
        self.released_s = self.env.now
        self._enter_stage(0)

    def _enter_stage(self, k: int) -> None:
        """Tail stage ``k`` starts now (idle after the last); the next follows unless a
        transfer comes first."""
        tail = self.radio.tail
        if k == len(tail):
            self._enter(IDLE)
            return
        self._enter(tail[k].state, stage=k)
        self._tail.set(tail[k].duration_s, lambda: self._enter_stage(k + 1))

    def released_ago_s(self, now_s: float) -> float | None:
        """For a decision at ``now_s``: how long ago its tail began (``-inf``: it carries
        transfers, or is being promoted; ``None``: idle, or a radio without states)."""
        if not self.radio.stateful or self.state == IDLE:
            return None
        if self._stage is None:
            return -math.inf
        released_s = self.released_s
        assert released_s is not None  # in a tail stage: set when the tail began (release)
        return now_s - released_s

    @property
    def last_change_s(self) -> float:
        return self._since
