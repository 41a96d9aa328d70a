"""The engine's power watch: node power fanned out to thermal models and batteries.

One job: know each watched node's power while the run goes on. Ops tell it when they
start and end on a watched unit (:meth:`PowerWatch.started`, :meth:`PowerWatch.ended`),
radios push their own changes; the node's thermal model and battery integrate it. When a
battery runs out, :meth:`PowerWatch.stop` books the ops cut short.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import simpy

from simulator.engine.ledger import Ledger
from simulator.engine.power import Battery, NodePower
from simulator.engine.radio import RadioState
from simulator.engine.state import Request
from simulator.engine.thermal import NodeThermal
from simulator.hardware.dvfs_state import DvfsState
from simulator.platform import Platform


class UnitPower:
    """A watched unit: its node's power and the increment of a whole-unit op above idle."""

    __slots__ = ("active_w", "idle_w", "increment_w", "node")

    def __init__(self, node: NodePower, increment_w: float, active_w: float, idle_w: float):
        self.node = node
        self.idle_w = idle_w
        self.increment_w = increment_w  # W above idle while the whole unit is busy
        self.active_w = active_w  # W while the whole unit is busy (no DVFS)


class Running:
    """An op running on a watched unit: what to undo when it ends or the battery stops."""

    __slots__ = ("i", "increment_w", "request", "start_s", "uid")

    def __init__(self, uid: str, start_s: float, increment_w: float, request: Request, i: int):
        self.uid = uid
        self.start_s = start_s
        self.increment_w = increment_w
        self.request = request  # the attempt running it (a fallback may replace it)
        self.i = i


class PowerWatch:
    """Node power, thermal throttling and batteries during a run.

    Parameters
    ----------
    env : simpy.Environment
    platform : Platform
    radios : sequence of RadioState
        The run's device radios (their power counts in their node's).
    dvfs : mapping of unit id -> DvfsState
        The DVFS units (a hot node caps their levels).

    Notes
    -----
    Only nodes with a thermal model or a battery are watched; ops on other nodes cost
    nothing here (:attr:`units` has no entry for their units).
    """

    def __init__(
        self,
        env: simpy.Environment,
        platform: Platform,
        radios: Sequence[RadioState],
        dvfs: Mapping[str, DvfsState],
    ):
        self.thermal: dict[str, NodeThermal] = {}
        self.batteries: dict[str, Battery] = {}
        #: unit id -> its node's power, for the units of watched nodes
        self.units: dict[str, UnitPower] = {}
        # by (attempt, op): a request's id is not enough, an attempt given up (a timeout,
        # a failure) may still run an op beside its next attempt's (the record is alive
        # while it is here, so its id is unique)
        self._running: dict[tuple[int, int], Running] = {}
        for node in platform.nodes.values():
            if node.thermal is None and node.battery_j is None:
                continue
            mine = [r for r in radios if r.node == node.name]
            power = NodePower(sum(u.idle_w for u in node.units) + sum(r.power_w() for r in mine))
            if node.thermal is not None:
                caps = [
                    (dvfs[f"{node.name}.{u.name}"], u.throttled_max_hz or 0.0)
                    for u in node.units
                    if u.dvfs is not None
                ]
                self.thermal[node.name] = NodeThermal(
                    env, node.name, node.thermal, power.power_w, caps
                )
                power.listeners.append(self.thermal[node.name])
            if node.battery_j is not None:
                self.batteries[node.name] = Battery(env, node.name, node.battery_j, power.power_w)
                power.listeners.append(self.batteries[node.name])
            for u in node.units:
                self.units[f"{node.name}.{u.name}"] = UnitPower(
                    power, u.active_w - u.idle_w, u.active_w, u.idle_w
                )
            for radio in mine:
                radio.power_listener = power

    def started(
        self, watched: UnitPower, uid: str, request: Request, i: int, now: float, inc_w: float
    ) -> None:
        """Op ``i`` of ``request`` started on watched unit ``uid``, drawing ``inc_w`` W
        above the unit's idle power."""
        watched.node.changed(inc_w)
        self._running[(id(request), i)] = Running(uid, now, inc_w, request, i)

    def ended(self, watched: UnitPower, request: Request, i: int) -> None:
        """Op ``i`` of ``request`` ended on a watched unit."""
        watched.node.changed(-self._running.pop((id(request), i)).increment_w)

    def stop(self, now: float, ledger: Ledger) -> str:
        """A battery ran out at ``now``: book the ops cut short; returns why the run ends."""
        empty = sorted(n for n, b in self.batteries.items() if b.empty.triggered)
        # each running op's own attempt (not the book's current one, which a fallback
        # may have replaced, or trace none released)
        for run in self._running.values():
            request, i = run.request, run.i
            state = request.steps[i].dvfs
            if state is not None:  # at the level it started at
                levels = request.levels
                assert levels is not None  # a running DVFS op noted its level at its start
                busy_w = state.busy_w[levels[i]]
            else:
                busy_w = self.units[run.uid].active_w
            ledger.partial_op(run.uid, run.start_s, now, request.steps[i].core_share, busy_w)
        return f"battery of {', '.join(empty)} empty at {now:.6g} s"
