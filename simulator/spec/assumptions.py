"""Warnings for what a scenario leaves out and the loader silently assumes.

A compute unit may omit its efficiency and power: the schema then fills in values
that make results look better than any real unit (every op at peak, 0 W). They are
legitimate for a textbook example (HEFT's abstract processors), but a user who forgot
them would rely on wrong latency or energy, so
:func:`warn_unit_defaults` emits one :class:`UnitAssumptionWarning` per unit and cause
when the scenario is loaded (never while it runs).

Each message is emitted once per process (a sweep loads its scenario once per point);
:func:`reset` forgets them (tests).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from simulator.errors import Problem, SocsimWarning
from simulator.schema import Loc, mark_of

__all__ = ["UnitAssumptionWarning", "reset", "warn_unit_defaults"]


class UnitAssumptionWarning(SocsimWarning):
    """A compute unit omits a figure the results depend on, and a default stands in."""


#: (keys any one of which makes the figure explicit, what the default assumes, the fix)
_CAUSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("efficiency",),
        "no efficiency given: every op runs at 100% of peak_gflops",
        "give efficiency: {default: FRACTION} (1.0 keeps peak)",
    ),
    (
        ("idle_w", "active_w", "dvfs"),
        "no idle_w, active_w or dvfs given: it draws 0 W, so its energy is 0 J",
        "give idle_w and active_w (0 keeps it free)",
    ),
)

_warned: set[str] = set()


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
    mark = mark_of(loc.container, loc.key)
    emitted = 0
    for keys, assumed, fix in _CAUSES:
        if any(key in raw_unit for key in keys):
            continue
        where = Problem(
            path=loc.path,
            message=f"unit '{node}.{unit}': {assumed}; {fix}",
            file=mark.file if mark is not None else None,
            line=mark.line if mark is not None else None,
        )
        text = str(where)
        if text not in _warned:
            _warned.add(text)
            warnings.warn(text, UnitAssumptionWarning, stacklevel=2)
            emitted += 1
    return emitted
