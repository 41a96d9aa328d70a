"""Warnings for what a scenario leaves out and the loader silently assumes.

A compute unit may omit its efficiency, power and (with a roofline) memory bandwidth,
and a node of several units its copy bandwidth: the schema then fills in values that
make results look better than any real hardware (every op at peak, 0 W, bytes that move
in no time, free copies between units). They are legitimate for a textbook example
(HEFT's abstract processors), but a user who forgot them would rely on wrong latency or
energy, so :func:`warn_unit_defaults` and :func:`warn_node_defaults` emit one
:class:`UnitAssumptionWarning` per unit (node) and cause when the scenario is loaded
(never while it runs). Each message says how to state the figure, and an unbounded
bandwidth is stated as ``unbounded`` (:data:`~simulator.schema.UNBOUNDED`): a key
present, whatever its value, silences its cause.

Each message is emitted once per process (a sweep loads its scenario once per point);
:func:`reset` forgets them (tests).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping

from simulator.errors import Problem, SocsimWarning
from simulator.schema import UNBOUNDED, Loc, mark_of

__all__ = ["UnitAssumptionWarning", "reset", "warn_node_defaults", "warn_unit_defaults"]


class UnitAssumptionWarning(SocsimWarning):
    """A compute unit omits a figure the results depend on, and a default stands in."""


#: (keys any one of which makes the figure explicit, what the default assumes, the fix,
#: keys one of which must be given for the cause to apply: none, always)
_CAUSES: tuple[tuple[tuple[str, ...], str, str, tuple[str, ...]], ...] = (
    (
        ("efficiency",),
        "no efficiency given: every op runs at 100% of peak_gflops",
        "give efficiency: {default: FRACTION} (1.0 keeps peak)",
        (),
    ),
    (
        ("idle_w", "active_w", "dvfs"),
        "no idle_w, active_w or dvfs given: it draws 0 W, so its energy is 0 J",
        "give idle_w and active_w (0 keeps it free)",
        (),
    ),
    (
        # a unit with a roofline (peak_gflops) but no memory figure: every op is compute
        # bound, whatever its bytes; units timed only by explicit tables have no roofline
        ("memory_bandwidth_gb_s", "caches"),
        "no memory_bandwidth_gb_s or caches given: moving an op's bytes takes no time, so "
        "every op is compute bound",
        f"give memory_bandwidth_gb_s (the unit's DRAM bandwidth), or "
        f"memory_bandwidth_gb_s: {UNBOUNDED} to mean it",
        ("peak_gflops",),
    ),
)
#: A node's cause: with two or more units, a tensor copied between them costs only
#: ``sync_us``. A node's DRAM (``dram_bandwidth_gb_s``) needs no cause of its own: absent,
#: it is its largest unit's memory bandwidth, unbounded only when every unit's is, and
#: each such roofline unit is warned about above.
_NODE_CAUSE = (
    "shared_memory_bandwidth_gb_s",
    "no shared_memory_bandwidth_gb_s given: a copy between its units costs only sync_us, "
    "whatever its bytes",
    f"give shared_memory_bandwidth_gb_s, or shared_memory_bandwidth_gb_s: {UNBOUNDED} to mean it",
)

_warned: set[str] = set()
#: A fleet member's index in a node name (simulator.spec.fleets.member_name)
_MEMBER = re.compile(r"\[\d+\](?=[.':]|$)")


def reset() -> None:
    """Forget the warnings already emitted (each is emitted once per process)."""
    _warned.clear()


def warn_unit_defaults(node: str, unit: str, raw_unit: Mapping, loc: Loc) -> int:
    """Warn once per cause about the figures unit ``node.unit`` leaves to defaults.

    Parameters
    ----------
    node, unit : str
        The node and unit names.
    raw_unit : Mapping
        The unit's YAML mapping as written (includes merged): a key present, whatever
        its value, is explicit.
    loc : Loc
        The unit's YAML location (file, line and path in the message).

    Returns
    -------
    int
        Warnings emitted by this call (0 when every one was emitted before).
    """
    emitted = 0
    for keys, assumed, fix, applies in _CAUSES:
        if any(key in raw_unit for key in keys):
            continue
        if applies and not any(key in raw_unit for key in applies):
            continue
        emitted += _warn(loc, f"unit '{node}.{unit}': {assumed}; {fix}")
    return emitted


def warn_node_defaults(node: str, raw_node: Mapping, n_units: int, loc: Loc) -> int:
    """Warn once when node ``node`` of ``n_units`` >= 2 units leaves its copy bandwidth
    to the default (unbounded: a copy between its units costs only ``sync_us``).

    Parameters
    ----------
    node : str
        The node's name.
    raw_node : Mapping
        The node's YAML mapping as written (includes merged).
    n_units : int
        Its units: with one, nothing is ever copied between units.
    loc : Loc
        The node's YAML location.

    Returns
    -------
    int
        Warnings emitted by this call (0 or 1).
    """
    key, assumed, fix = _NODE_CAUSE
    if n_units < 2 or key in raw_node:
        return 0
    return _warn(loc, f"node '{node}': {assumed}; {fix}")


def _warn(loc: Loc, message: str) -> int:
    """Emit ``message`` at ``loc`` unless it was emitted before; 1 if it was emitted.

    The members of a fleet (``phone[0]``, ``phone[1]``...: docs/fleets.md) share one
    message, written for ``phone[i]``: a fleet of 1,000 warns once per cause, not 1,000
    times."""
    mark = mark_of(loc.container, loc.key)
    where = Problem(
        path=_MEMBER.sub("[i]", loc.path),
        message=_MEMBER.sub("[i]", message),
        file=mark.file if mark is not None else None,
        line=mark.line if mark is not None else None,
    )
    text = str(where)
    if text in _warned:
        return 0
    _warned.add(text)
    warnings.warn(text, UnitAssumptionWarning, stacklevel=3)
    return 1
