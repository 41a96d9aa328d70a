"""Online HEFT: each request planned at its arrival into the units' reservations.

``placement: {policy: heft, online: true}`` keeps, per unit, the slots reserved by the
requests planned so far (every online app of a run shares them). A request arriving at
``t`` is planned by HEFT's own rule (:func:`~simulator.placement.listsched.heft_order`,
:meth:`~simulator.placement.listsched.Schedule.best_unit` with insertion): its ops in
decreasing upward rank, each on the unit where it finishes first, in the first gap of
that unit's reservations that starts no earlier than its inputs are there (the entry
ops' at ``t`` + the input's transfer). Reservations are never moved: a later request
only fills gaps and appends.

The planner is pure (no SimPy; its only state is the reservations it returns records
of): :meth:`OnlineHeft.plan` returns a :class:`RequestSchedule`, the request's
placement (op order = reserved start) and every op's :class:`Reservation`. The engine
(``simulator/engine/reserved.py``) runs each unit's ops in the order of their
reservation keys, so with the costs the plan used (explicit time tables and
communication costs, no contention) every op starts and ends at its reserved times.

A slot that ended before a request arrives can no longer matter (every op of that
request and of later ones is ready at its arrival or after, and the insertion search
passes over slots that end before the ready time), so a unit's slots are rebuilt without
those once it holds ``forget_after`` slots more than twice what the last rebuild kept:
memory follows the reservations ahead, not the run's length, and the schedules are the
same (tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import Placement, PlacementSpec
from simulator.placement.listcosts import CostTable, build_cost_table
from simulator.placement.listsched import Schedule, heft_order
from simulator.placement.timeline import Timeline
from simulator.platform import CostOracle


def is_online(spec: PlacementSpec) -> bool:
    """Whether ``spec`` is online HEFT (``{policy: heft, online: true}``)."""
    return spec.name == "heft" and bool(spec.options.get("online", False))


def online_apps(scenario: Any) -> dict[str, tuple[ModelGraph, str, Mapping[str, Any]]]:
    """App name -> (graph, source, options) of every online HEFT app of ``scenario``."""
    return {
        e.app: (scenario.models[e.model], e.source, scenario.placements_for(e)[0].options)
        for e in scenario.workload
        if any(is_online(spec) for spec in scenario.placements_for(e))
    }


def shared_units(
    scenario: Any, planner: OnlineHeft, units_of: Mapping[str, list[tuple[str, ...]]]
) -> list[tuple[int, PlacementError]]:
    """(workload index, error) of each app not online that runs ops on a unit the online
    apps may reserve (``units_of``: app -> its placements' units): such a unit runs its
    reserved ops only, in reservation order."""
    reserved = {uid for app in planner.apps for uid in planner.units_of(app)}
    found = []
    for index, entry in enumerate(scenario.workload):
        if entry.app in planner.apps:
            continue
        shared = sorted({uid for units in units_of.get(entry.app, ()) for uid in units} & reserved)
        if shared:
            message = (
                f"app '{entry.app}' runs ops on {', '.join(shared)}, which online HEFT "
                f"({', '.join(planner.apps)}) may reserve: a unit runs its reserved ops "
                "only, in reservation order; give the online apps 'exclude: [...]' or "
                "place this app on other units"
            )
            found.append((index, PlacementError(message, "heft")))
    return found


@dataclass(frozen=True, slots=True)
class Reservation:
    """One op of one request reserved on a unit.

    Attributes
    ----------
    op : str
    unit : str
        Qualified unit id.
    start_s, finish_s : float
        The reserved interval (s, absolute simulated time).
    key : tuple
        The unit's order key: (reserved start in the planner's arithmetic, exact when
        its costs are, then the order of reservation over the run: a slot reserved later
        at the same start runs after).
    """

    op: str
    unit: str
    start_s: float
    finish_s: float
    key: tuple


@dataclass(frozen=True, slots=True)
class RequestSchedule:
    """A request as online HEFT planned it.

    Attributes
    ----------
    app : str
    arrival_s : float
        When the request's input was at its source (s).
    placement : Placement
        Op -> unit; order = reserved start (ties: HEFT's order).
    reservations : tuple of Reservation
        In ``placement.order``.
    finish_s : float
        When the last output is back at the source, as planned (s, absolute).
    """

    app: str
    arrival_s: float
    placement: Placement
    reservations: tuple[Reservation, ...]
    finish_s: float


@dataclass(frozen=True, slots=True)
class _AppCosts:
    costs: CostTable
    order: list[int]
    source: str


class OnlineHeft:
    """The units' reservations and the online HEFT planner of a run's online apps.

    Parameters
    ----------
    apps : mapping of app name -> (graph, source node, placement options)
    oracle : CostOracle
    forget_after : int
        Rebuild a unit's slots without those that ended before the arrival being planned
        once it holds this many more than twice what the last rebuild kept (the module
        doc); requests must then be planned in order of arrival.

    Notes
    -----
    Every app's costs use one arithmetic, since they share the reservations: exact
    rationals when every online app's ops have explicit time tables (and no app says
    ``exact: no``), floats otherwise.

    Raises
    ------
    PlacementError
        When an op of an app has no candidate unit.
    """

    def __init__(
        self,
        apps: Mapping[str, tuple[ModelGraph, str, Mapping[str, Any]]],
        oracle: CostOracle,
        forget_after: int = 4096,
    ):
        tables = {
            app: build_cost_table(graph, oracle, source, options, "heft")
            for app, (graph, source, options) in apps.items()
        }
        exact = all(t.exact for t in tables.values())
        self.apps: dict[str, _AppCosts] = {}
        for app, (graph, source, options) in apps.items():
            costs = tables[app]
            if costs.exact != exact:  # rebuilt in the run's one arithmetic
                forced = {**options, "exact": "yes" if exact else "no"}
                costs = build_cost_table(graph, oracle, source, forced, "heft")
            self.apps[app] = _AppCosts(costs, heft_order(costs), source)
        self.exact = exact
        self.timelines = {uid: Timeline(exact) for uid in oracle.platform.unit_ids}
        self.reserved = 0  # reservations made: the next one's seq
        self.forget_after = forget_after
        self.held = dict.fromkeys(self.timelines, 0)  # slots per unit now
        self.kept = dict.fromkeys(self.timelines, 0)  # slots per unit after its last rebuild
        self.horizon = None  # the latest arrival slots were forgotten at

    def units_of(self, app: str) -> list[str]:
        """The units ``app``'s requests may reserve (its candidate units)."""
        return list(self.apps[app].costs.units)

    def plan(self, app: str, arrival_s: float) -> RequestSchedule:
        """Plan a request of ``app`` arriving at ``arrival_s`` (s) and reserve its slots.

        Raises
        ------
        PlacementError
            When ``app`` is not an online app of this planner.
        """
        entry = self.apps.get(app)
        if entry is None:
            raise PlacementError(f"app '{app}' is not planned online", "heft")
        costs = entry.costs
        release = costs.num(arrival_s)
        self._forget(release)
        schedule = Schedule(costs, self.timelines, release=release)
        seq = {}
        for i in entry.order:
            unit, start = schedule.best_unit(i, insertion=True)
            schedule.assign(i, unit, start)  # into the shared timelines
            seq[i] = self.reserved
            self.reserved += 1
            self.held[unit] += 1
        placement = schedule.placement("heft", entry.source, entry.order, {"online": True})
        names = costs.ops
        index = {name: i for i, name in enumerate(names)}
        reservations = tuple(
            Reservation(
                op,
                placement.assignment[op],
                float(schedule.start[i]),
                float(schedule.finish[i]),
                (schedule.start[i], seq[i]),
            )
            for op in placement.order
            for i in (index[op],)
        )
        return RequestSchedule(
            app, arrival_s, placement, reservations, placement.notes["scheduled_makespan_s"]
        )

    def _forget(self, now) -> None:
        """Drop the slots that ended by ``now`` from units that hold many (module doc)."""
        if self.horizon is not None and now < self.horizon:
            raise PlacementError(
                f"a request arriving at {float(now)} s is planned after slots up to "
                f"{float(self.horizon)} s were forgotten: plan requests in order of arrival",
                "heft",
            )
        for uid, timeline in self.timelines.items():
            if self.held[uid] <= self.forget_after + 2 * self.kept[uid]:
                continue
            fresh = Timeline(self.exact)
            for start, end in timeline.slots():
                if end > now:
                    fresh.insert(start, end)
            self.timelines[uid] = fresh
            self.held[uid] = self.kept[uid] = len(fresh.slots())
            self.horizon = now
