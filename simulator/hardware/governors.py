"""DVFS governors: pure rules ``(table, state, options) -> level``, as a registry.

The engine asks a unit's governor for a level at the end of every sampling window (for
the dynamic governors) and whenever the thermal cap changes; the governor sees only a
:class:`GovernorInput` and its validated options. Every governor returns a level in
``0 .. min(top, thermal_cap_level)``. Each built-in governor is written once, as a *rule*
prepared for one table (:func:`governor_rule`): what the engine asks at every op start on
a DVFS unit, without building or checking an input each time.

``utilisation`` is what the kernel's ondemand governor samples: the busy fraction of the
last window, measured at the level the unit ran (``current_level``). The work's demand in
frequency terms is therefore ``utilisation × f(current_level)`` — the same quantity as
the kernel's frequency-invariant ``util × f_max`` (Linux ``Documentation/admin-guide/pm/
cpufreq.rst``, schedutil: ``f = 1.25 · f_0 · util / max`` with ``f_0`` the current
frequency when util is not frequency-invariant). At the top level the rules below are
exactly ``f_max × utilisation / up_threshold`` (ondemand) and ``1.25 × f_max ×
utilisation`` (schedutil).

* ``performance``: the highest allowed level.
* ``powersave``: the lowest level.
* ``fixed``: option ``level`` (clamped to the thermal cap).
* ``ondemand``: if ``utilisation > up_threshold`` (default 0.8), the highest allowed
  level; otherwise the lowest level with ``f >= utilisation × f_cur / up_threshold``, the
  lowest frequency that would keep the load at or below the threshold (Linux
  ``drivers/cpufreq/cpufreq_ondemand.c``, ``dbs_check_cpu``: "the lowest frequency that
  can support the current CPU usage without triggering the up policy").
* ``schedutil``: target ``headroom × utilisation × f_cur`` (headroom 1.25: "the
  frequency tipping point at util/max = 0.8", ``kernel/sched/cpufreq_schedutil.c``
  ``get_next_freq``); the lowest level whose frequency is >= the target.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import ScenarioError, SocsimError
from simulator.hardware.dvfs import DvfsTable, is_integer, lowest_level_at_least
from simulator.limits import MAX_HORIZON_S, MIN_HOLD_S
from simulator.registry import Registry
from simulator.schema import INVALID, Context, Field, Loc, Number, Record

#: Default sampling window of the dynamic governors: Linux ondemand's ``sampling_rate``
#: is "typically ... of the order of 10000 (10 ms)" (admin-guide/pm/cpufreq.rst).
DEFAULT_WINDOW_MS = 10.0


@dataclass(frozen=True)
class GovernorInput:
    """What a governor sees when asked for a level.

    Attributes
    ----------
    utilisation : float
        Busy fraction (0..1) of the last sampling window, at ``current_level``. For a
        unit running several ops at once, the busiest slot's fraction (the kernel takes
        "the greatest result" over the CPUs of a shared policy).
    current_level : int
        The level the unit ran at during the window.
    thermal_cap_level : int or None
        The highest level allowed (thermal throttling), or None for no cap.
    """

    utilisation: float
    current_level: int
    thermal_cap_level: int | None = None

    def __post_init__(self) -> None:
        u = self.utilisation
        # a float in range is the common case (every op start on a DVFS unit): skip the
        # abstract-class check, which dominated the governors' cost
        fast = type(u) is float and 0.0 <= u <= 1.0
        if not fast and (
            isinstance(u, bool) or not isinstance(u, numbers.Real) or not 0.0 <= u <= 1.0
        ):
            raise SocsimError(f"governor input: utilisation must be in [0, 1], got {u!r}")
        if not is_integer(self.current_level) or self.current_level < 0:
            raise SocsimError(
                f"governor input: current_level must be an integer >= 0, got {self.current_level!r}"
            )
        object.__setattr__(self, "current_level", int(self.current_level))
        cap = self.thermal_cap_level
        if cap is not None:
            if not is_integer(cap) or cap < 0:
                raise SocsimError(
                    "governor input: thermal_cap_level must be None or an integer >= 0, "
                    f"got {cap!r}"
                )
            object.__setattr__(self, "thermal_cap_level", int(cap))

    @classmethod
    def trusted(
        cls, utilisation: float, current_level: int, thermal_cap_level: int | None
    ) -> GovernorInput:
        """An input built without the checks, for a caller whose fields are right by
        construction (the engine's DVFS state: a utilisation clamped to [0, 1], levels of
        its own table); it asks at every op start, where the checks cost a tenth of the
        decision."""
        state = object.__new__(cls)
        fields = state.__dict__
        fields["utilisation"] = utilisation
        fields["current_level"] = current_level
        fields["thermal_cap_level"] = thermal_cap_level
        return state


#: governor(table, state, options) -> level
Governor = Callable[[DvfsTable, GovernorInput, Mapping[str, Any]], int]

GOVERNORS: Registry[Governor] = Registry("governor", "socsim.governors")

_NO_OPTIONS = Record({}, name="governor options")


def _window_field() -> Field:
    return Field(
        Number("ms", scale=1e-3, ge=MIN_HOLD_S * 1e3, le=MAX_HORIZON_S * 1e3),
        default=DEFAULT_WINDOW_MS,  # in the key's unit (ms), as every default
        to="window_s",
        doc="sampling window between two decisions",
    )


def allowed_top(table: DvfsTable, state: GovernorInput) -> int:
    """The highest level the governor may pick: the top, or the thermal cap if lower."""
    return _ceiling(table.top, state.thermal_cap_level)


def demand_hz(table: DvfsTable, state: GovernorInput) -> float:
    """The frequency the last window's work used: ``utilisation × f(current_level)``."""
    return state.utilisation * table.frequency_hz(state.current_level)


#: A governor prepared for one table and its options (:func:`governor_rule`):
#: ``rule(utilisation, current_level, thermal_cap_level) -> level``, the same level as
#: the governor's function for the same :class:`GovernorInput`.
Rule = Callable[[float, int, int | None], int]

#: governor name -> make(table, options) -> Rule: each built-in governor is written once,
#: as its rule; its registered function (the checked, public form) applies the rule
_RULES: dict[str, Callable[[DvfsTable, Mapping[str, Any]], Rule]] = {}


def governor_rule(name: str, table: DvfsTable, options: Mapping[str, Any]) -> Rule:
    """Governor ``name`` prepared for ``table`` and its validated ``options``.

    The engine asks its DVFS units' governors at every op start: the rule looks the
    table's frequencies and the options up once, and takes the input's fields as plain
    arguments (no :class:`GovernorInput`, no checks: the caller's utilisation is in
    [0, 1] and its levels are the table's). A governor registered without a rule is
    called through its function.
    """
    make = _RULES.get(name)
    if make is not None:
        return make(table, options)
    function = GOVERNORS.get(name).function
    return lambda utilisation, current, cap: function(
        table, GovernorInput.trusted(utilisation, current, cap), options
    )


def rule_is_monotone(name: str) -> bool:
    """Whether governor ``name``'s rule is known never to pick a lower level for a higher
    utilisation (the same current level and cap).

    True of every built-in rule (``tests/hardware/test_governor_spans.py`` checks it on
    random inputs): the DVFS state then asks the rule only where its answer can change
    (:meth:`~simulator.hardware.dvfs_state.DvfsState.start`). A plug-in's is not assumed.
    """
    return name in _RULES


def _ruled(name: str, options: Record):
    """Register governor ``name`` from its rule's factory: the function checks the
    input's current level against the table, then applies the rule."""

    def add(make: Callable[[DvfsTable, Mapping[str, Any]], Rule]) -> Governor:
        def function(table: DvfsTable, state: GovernorInput, options: Mapping[str, Any]) -> int:
            table.check_level(state.current_level)
            rule = make(table, options)
            return rule(state.utilisation, state.current_level, state.thermal_cap_level)

        function.__name__ = make.__name__
        function.__doc__ = make.__doc__
        _RULES[name] = make
        return GOVERNORS.register(name, options)(function)

    return add


def _ceiling(top: int, cap: int | None) -> int:
    """:func:`allowed_top` of a rule's arguments."""
    return top if cap is None or cap > top else cap


@_ruled("performance", _NO_OPTIONS)
def performance(table: DvfsTable, options: Mapping[str, Any]) -> Rule:
    """The highest level allowed (Linux ``performance``)."""
    top = table.top
    return lambda utilisation, current, cap: _ceiling(top, cap)


@_ruled("powersave", _NO_OPTIONS)
def powersave(table: DvfsTable, options: Mapping[str, Any]) -> Rule:
    """The lowest level (Linux ``powersave``)."""
    return lambda utilisation, current, cap: 0


@_ruled(
    "fixed",
    Record(
        {"level": Field(Number(ge=0, integer=True), doc="operating point index, 0 = slowest")},
        name="fixed governor options",
    ),
)
def fixed(table: DvfsTable, options: Mapping[str, Any]) -> Rule:
    """One chosen level (Linux ``userspace`` with a set speed), under the thermal cap."""
    top = table.top

    def rule(utilisation: float, current: int, cap: int | None) -> int:
        # checked when asked (as the function always did), not when prepared
        level = table.check_level(int(options["level"]))
        return min(level, _ceiling(top, cap))

    return rule


@_ruled(
    "ondemand",
    Record(
        {
            "up_threshold": Field(
                Number(gt=0, le=1),
                default=0.8,
                doc="load above which the governor jumps to the highest level",
            ),
            "window_ms": _window_field(),
        },
        name="ondemand governor options",
    ),
)
def ondemand(table: DvfsTable, options: Mapping[str, Any]) -> Rule:
    """Jump to the highest allowed level above ``up_threshold``; else the lowest level
    that would keep the load at or below it (Linux ``ondemand``)."""
    threshold = options.get("up_threshold", 0.8)
    frequencies_hz, top = table.frequencies_hz, table.top

    def rule(utilisation: float, current: int, cap: int | None) -> int:
        ceiling = top if cap is None or cap > top else cap  # _ceiling, without a call
        if utilisation > threshold:
            return ceiling
        demand_hz = utilisation * frequencies_hz[current]  # as :func:`demand_hz`
        return lowest_level_at_least(frequencies_hz, demand_hz / threshold, ceiling)

    return rule


@_ruled(
    "schedutil",
    Record(
        {
            "headroom": Field(
                Number(ge=1),
                default=1.25,
                doc="target frequency = headroom x demand (kernel: 1.25)",
            ),
            "window_ms": _window_field(),
        },
        name="schedutil governor options",
    ),
)
def schedutil(table: DvfsTable, options: Mapping[str, Any]) -> Rule:
    """The lowest level at or above ``1.25 × demand`` (Linux ``schedutil``)."""
    headroom = options.get("headroom", 1.25)
    frequencies_hz, top = table.frequencies_hz, table.top

    def rule(utilisation: float, current: int, cap: int | None) -> int:
        target_hz = headroom * (utilisation * frequencies_hz[current])
        ceiling = top if cap is None or cap > top else cap  # _ceiling, without a call
        return lowest_level_at_least(frequencies_hz, target_hz, ceiling)

    return rule


def governor_options(name: str, raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options of governor ``name`` checked and converted to SI, defaults filled in.

    Raises
    ------
    SocsimError
        Unknown governor name (the message names the nearest one).
    ScenarioError
        Invalid options (all problems listed).
    """
    entry = GOVERNORS.get(name)
    ctx = Context()
    out = entry.options.check(dict(raw or {}), Loc(f"governor.{name}"), ctx)
    if out is INVALID or ctx.problems:
        raise ScenarioError(ctx.problems)
    return out


def choose_level(
    name: str,
    table: DvfsTable,
    state: GovernorInput,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Ask governor ``name`` for a level (options are raw YAML-style keys, validated here)."""
    table.check_level(state.current_level)
    return GOVERNORS.get(name).function(table, state, governor_options(name, options))


__all__ = [
    "DEFAULT_WINDOW_MS",
    "GOVERNORS",
    "Governor",
    "GovernorInput",
    "allowed_top",
    "choose_level",
    "demand_hz",
    "governor_options",
    "governor_rule",
    "rule_is_monotone",
]
