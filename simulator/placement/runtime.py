"""Run-time per-op schedulers: DS3's MET, EFT, ETF, STF and ETF_LB (pure decision rules).

DS3 (Arda et al., "DS3: A System-Level Domain-Specific System-on-Chip Simulation
Framework", IEEE TC 69(4), 2020; ``scheduler.py`` of github.com/segemena/DS3) decides
at run time: each time ops become ready (every predecessor has finished), the
scheduler is given them with the state of the processing elements and picks one for
each. socsim's engine does the same (:mod:`simulator.engine.runtime`): ops that become
ready at the same instant are decided together, in request then op order, by the rule
named in ``placement: {policy: etf}``. A rule is a pure function of a read-only
snapshot::

    rule(ready: Sequence[ReadyOp], units: UnitsView) -> list[Decision]

returning one decision per ready op, in the order they were made (a unit serves the
ops it is given in that order). The engine books each decision's estimated finish as
the unit's ``free_at_s`` for later decisions (DS3's ``available_time``).

The rules, as DS3's code decides (ties included):

* ``met``: each op on the unit of minimum execution time; among tied units the idle
  ones if some are busy, then the fewest ops given in this call, then the first.
* ``eft``: each op in turn on the unit of earliest estimated finish
  ``max(inputs there, unit free) + time``; ties: the first unit.
* ``etf``: repeatedly the (op, unit) pair of earliest finish over all ready ops; ties:
  the first op, the first unit.
* ``stf``: repeatedly the op of shortest minimum execution time (ties: the first) on
  that unit (ties: the first unit). DS3's code assigns in this order but does not
  reorder its ready list, so its units serve them in ready order; socsim serves them
  in the order decided, as the paper describes ("shortest task first").
* ``etf_lb``: ``etf`` whose tied units are broken by the fewest ops given so far in the
  run (load balancing), then the first. DS3 increments its counter for every op that
  becomes the best candidate during the scan, chosen or not; socsim counts the ops
  given to each unit. DS3 also scales times by a DVFS slowdown: socsim's times are the
  table's (or the roofline's at the unit's top level).

Units are indices into :attr:`UnitsView.free_at_s` (the platform's unit order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.objectives import COMMON_OPTIONS, candidate_units
from simulator.platform import CostOracle
from simulator.schema import Record


class ReadyOp(NamedTuple):
    """One op ready to be given a unit (read-only).

    Attributes
    ----------
    key : int
        The engine's handle, returned in the decision.
    units : tuple of int
        The units that can run it (indices, platform order).
    time_s : tuple of float
        Its time on each of ``units`` (s).
    inputs_at_s : tuple of float
        When every input would be on each of ``units`` (absolute s, >= now).
    """

    key: int
    units: tuple[int, ...]
    time_s: tuple[float, ...]
    inputs_at_s: tuple[float, ...]


class UnitsView(NamedTuple):
    """The units' live state when a decision is asked for (read-only), per unit index.

    Attributes
    ----------
    now_s : float
    free_at_s : tuple of float
        When the unit is expected free: the estimated finish of the last op decided on
        it, or the work queued and running there from other apps, whichever is later.
    idle : tuple of bool
        Whether it runs nothing now.
    given : tuple of int
        Ops given to it by run-time decisions so far in the run.
    """

    now_s: float
    free_at_s: tuple[float, ...]
    idle: tuple[bool, ...]
    given: tuple[int, ...]


class Decision(NamedTuple):
    """``key``'s op goes to unit ``unit``, estimated to finish at ``finish_s``."""

    key: int
    unit: int
    finish_s: float


RuntimeRule = Callable[[Sequence[ReadyOp], UnitsView], list[Decision]]

#: rule name -> decision rule; each name is also a placement policy
RUNTIME_RULES: dict[str, RuntimeRule] = {}


def _finish_row(op: ReadyOp, free_at: list[float]) -> list[float]:
    """Estimated finish of ``op`` on each of its units: max(inputs, free) + time."""
    return [
        (a if a > (f := free_at[u]) else f) + t
        for u, t, a in zip(op.units, op.time_s, op.inputs_at_s, strict=True)
    ]


def met(ready: Sequence[ReadyOp], units: UnitsView) -> list[Decision]:
    """Minimum execution time (DS3 ``MET``)."""
    given_here: dict[int, int] = {}
    decisions = []
    for op in ready:
        best = min(op.time_s)
        tied = [u for u, t in zip(op.units, op.time_s, strict=True) if t == best]
        if len(tied) > 1:
            idle = [u for u in tied if units.idle[u]]
            if idle:
                tied = idle
            unit = min(tied, key=lambda u: given_here.get(u, 0))  # first among the fewest
        else:
            unit = tied[0]
        given_here[unit] = given_here.get(unit, 0) + 1
        k = op.units.index(unit)
        start = max(op.inputs_at_s[k], units.free_at_s[unit])
        decisions.append(Decision(op.key, unit, start + op.time_s[k]))
    return decisions


def eft(ready: Sequence[ReadyOp], units: UnitsView) -> list[Decision]:
    """Earliest finish time, ops in ready order (DS3 ``EFT``)."""
    free_at = list(units.free_at_s)
    decisions = []
    for op in ready:
        row = _finish_row(op, free_at)
        k = row.index(min(row))
        unit = op.units[k]
        free_at[unit] = row[k]
        decisions.append(Decision(op.key, unit, row[k]))
    return decisions


def _earliest_first(ready: Sequence[ReadyOp], units: UnitsView, balance: bool) -> list[Decision]:
    free_at = list(units.free_at_s)
    given = list(units.given)
    left = list(ready)
    decisions = []
    while left:
        best: tuple[float, int, int] | None = None
        for n, op in enumerate(left):
            row = _finish_row(op, free_at)
            finish = min(row)
            if best is None or finish < best[0]:
                if balance:
                    tied = [op.units[k] for k, f in enumerate(row) if f == finish]
                    unit = min(tied, key=lambda u: given[u])  # first among the least given
                else:
                    unit = op.units[row.index(finish)]
                best = (finish, n, unit)
        assert best is not None  # ``left`` is not empty
        finish, n, unit = best
        op = left.pop(n)
        free_at[unit] = finish
        given[unit] += 1
        decisions.append(Decision(op.key, unit, finish))
    return decisions


def etf(ready: Sequence[ReadyOp], units: UnitsView) -> list[Decision]:
    """Earliest time first: the ready op of earliest finish goes first (DS3 ``ETF``)."""
    return _earliest_first(ready, units, balance=False)


def etf_lb(ready: Sequence[ReadyOp], units: UnitsView) -> list[Decision]:
    """ETF with ties between units broken by the fewest ops given (DS3 ``ETF_LB``)."""
    return _earliest_first(ready, units, balance=True)


def stf(ready: Sequence[ReadyOp], units: UnitsView) -> list[Decision]:
    """Shortest task first, each on its fastest unit (DS3 ``STF``)."""
    fastest = []
    for n, op in enumerate(ready):
        best = min(op.time_s)
        fastest.append((best, n, op.time_s.index(best)))
    fastest.sort()  # shortest first; ties: the first ready (n is unique)
    free_at = list(units.free_at_s)
    decisions = []
    for best, n, k in fastest:
        op = ready[n]
        unit = op.units[k]
        start = max(op.inputs_at_s[k], free_at[unit])
        free_at[unit] = start + best
        decisions.append(Decision(op.key, unit, start + best))
    return decisions


def runtime_rule(placement: Placement) -> RuntimeRule | None:
    """The run-time rule a placement defers to (None for a static placement)."""
    name = placement.notes.get("runtime")
    return RUNTIME_RULES[name] if name is not None else None


def _provisional(
    name: str, graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Each op on its fastest candidate unit (ties: the first): the plan ``validate``,
    ``explain`` and the tables show; the engine decides every op again at run time."""
    units = candidate_units(oracle, source, options, name)
    ops = [graph.op(n) for n in graph.order]
    assignment = {}
    for op, row in zip(ops, oracle.op_time_rows(ops), strict=True):
        times = [(t, k) for k, u in enumerate(units) if (t := row[u]) is not None]
        if not times:
            raise PlacementError("no candidate unit can run it", name, op.name)
        assignment[op.name] = units[min(times)[1]]
    notes = {
        "runtime": name,
        "candidates": tuple(units),
        "shown": "each op on its fastest unit; the engine decides each op's unit at run time",
    }
    return Placement(assignment, tuple(graph.order), name, source, notes)


def register_runtime_rule(name: str, rule: RuntimeRule) -> RuntimeRule:
    """Make ``rule`` a placement policy ``name`` decided at run time (returns ``rule``).

    The policy's static plan (what ``validate`` and ``explain`` show) is each op on its
    fastest candidate unit; the engine asks ``rule`` for every op as it becomes ready.
    """
    if name in RUNTIME_RULES:
        raise PlacementError(f"run-time rule '{name}' is already registered")

    def policy(
        graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
    ) -> Placement:
        return _provisional(name, graph, oracle, source, options)

    policy.__name__ = name
    summary = (rule.__doc__ or name).strip().splitlines()[0].rstrip(".")
    policy.__doc__ = (
        f"{summary}: each op's unit decided at run time, when it becomes ready (docs/placement.md)."
    )
    options = Record({"exclude": COMMON_OPTIONS["exclude"]}, name=f"{name} placement")
    POLICIES.add(name, policy, options)
    RUNTIME_RULES[name] = rule
    return rule


for _name, _rule in (("met", met), ("eft", eft), ("etf", etf), ("stf", stf), ("etf_lb", etf_lb)):
    register_runtime_rule(_name, _rule)
