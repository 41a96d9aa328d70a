"""The rules a scenario's apps and links obey, written once (issue 17, item 1).

Each rule is a pure function that yields :class:`RuleError` records, one per breach,
each carrying its facts as fields (what is wrong, the YAML path of the value at fault
relative to the thing checked, the value and the valid choices), as pint's errors carry
their units. Two callers use the same functions:

- the frozen dataclasses (:class:`~simulator.workload.WorkloadEntry`,
  :class:`~simulator.spec.scenario.Scenario`) raise the first breach from
  ``__post_init__``, so a spec built in Python obeys the same rules;
- the scenario loader (:mod:`simulator.spec.loader`) reports every breach at once,
  translating each into a :class:`~simulator.errors.Problem` with the file, the line,
  the absolute YAML path and the nearest valid choice (:func:`report`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from simulator.errors import SocsimError

Path = tuple[str | int, ...]


class RuleError(SocsimError):
    """A rule broken; the fields say which value and what would be valid.

    Attributes
    ----------
    message : str
        What is wrong and what was expected.
    path : tuple of str or int
        Keys from the thing checked (a workload entry, a scenario) down to the value at
        fault, e.g. ``("workload", 1, "app")``; empty for the thing itself.
    value : object
        The offending value (None when the breach is an absence).
    choices : tuple of str
        The valid names, when the value should have been one of them.
    subject : str
        What was checked, for the message outside YAML (``"app 'camera'"``).
    """

    def __init__(
        self,
        message: str,
        path: Path = (),
        value: Any = None,
        choices: Iterable[str] = (),
        subject: str = "",
    ):
        self.message = message
        self.path = tuple(path)
        self.value = value
        self.choices = tuple(str(c) for c in choices)
        self.subject = subject
        text = f"{subject}: {message}" if subject else message
        hint = self.suggestion
        super().__init__(text + (f" (did you mean '{hint}'?)" if hint else ""))

    @property
    def suggestion(self) -> str | None:
        """The valid choice nearest to the value, if any is near."""
        if not self.choices or not isinstance(self.value, str):
            return None
        from simulator.schema import nearest

        return nearest(self.value, self.choices)

    def within(self, *prefix: str | int) -> RuleError:
        """The same breach seen from a container: ``prefix`` prepended to its path."""
        return RuleError(
            self.message, (*prefix, *self.path), self.value, self.choices, self.subject
        )

    def __reduce__(self):
        return (type(self), (self.message, self.path, self.value, self.choices, self.subject))


def raise_first(errors: Iterable[RuleError]) -> None:
    """Raise the first breach of ``errors`` (what ``__post_init__`` does)."""
    for error in errors:
        raise error


# -- one app (a workload entry) -------------------------------------------------------------
def app_bounded(app: str, count: int | None, duration_s: float | None, arrival: str):
    """An app's requests are bounded by a count or a duration (a trace bounds itself)."""
    if count is None and duration_s is None and arrival != "trace":
        yield RuleError(
            "open-ended arrivals: give count or duration_s (here, or a duration_s at the "
            "top level for every app)",
            subject=f"app '{app}'",
        )


def placement_xor_replicas(app: str, placement: Any, replicas: Sequence[Any]):
    """An app gives one placement or a list of replicas, not both."""
    if replicas and placement is not None:
        yield RuleError("give either 'placement' or 'replicas', not both", subject=f"app '{app}'")


def adaptive_dispatch(app: str, dispatch: str, has_adaptive: bool, n_replicas: int):
    """Adaptive options go with ``dispatch: adaptive``, which needs two candidates or more."""
    from simulator.scheduling import PREDICTIVE_DISPATCHERS

    subject = f"app '{app}'"
    if dispatch not in PREDICTIVE_DISPATCHERS:
        if has_adaptive:
            yield RuleError(
                f"'adaptive' options need 'dispatch: adaptive' (this app has '{dispatch}')",
                ("adaptive",),
                subject=subject,
            )
    elif n_replicas < 2:
        yield RuleError(
            f"dispatch '{dispatch}' chooses among candidate placements: list at least two "
            "under 'replicas'",
            ("dispatch",),
            subject=subject,
        )


def online_heft(
    app: str, placement: Any, replicas: Sequence[Any], default: Any, transfer_timeout_s: Any
):
    """Online HEFT is an app's only placement, and its requests are never given up."""
    from simulator.placement.online import is_online

    subject = f"app '{app}'"
    specs = tuple(replicas) or (placement if placement is not None else default,)
    online = [k for k, spec in enumerate(specs) if spec is not None and is_online(spec)]
    if len(specs) > 1:
        for k in online:
            yield RuleError(
                "online HEFT plans every request itself: give it as the app's only "
                "placement ('placement: {policy: heft, online: true}'), not among replicas",
                ("replicas", k, "online"),
                subject=subject,
            )
    elif online and transfer_timeout_s is not None:
        yield RuleError(
            "online HEFT reserves the units for the whole request, which a transfer "
            "timeout would give up: remove its transfer timeout or 'online: true'",
            subject=subject,
        )


def app_names_known(
    app: object, model: Any, source: Any, models: Collection[str], nodes: Collection[str]
) -> Iterator[RuleError]:
    """An app names a model and a source node of its scenario."""
    subject = f"app '{app}'"
    for key, value, kind, known in (
        ("model", model, "model", models),
        ("source", source, "node", nodes),
    ):
        if isinstance(value, str) and value and value not in known:
            names = ", ".join(collapse_members([str(k) for k in known]))
            yield RuleError(
                f"unknown {kind} '{value}'; {kind}s: {names}", (key,), value, known, subject
            )


# -- a scenario's apps together -------------------------------------------------------------
def app_names_unique(apps: Sequence[Any]) -> Iterator[RuleError]:
    """No two apps share a name; each repeat is reported where it repeats."""
    first: dict[Any, int] = {}
    for i, app in enumerate(apps):
        if app in first:
            yield RuleError(
                f"app name '{app}' already used by workload[{first[app]}]", ("workload", i, "app")
            )
        first.setdefault(app, i)


def app_has_placement(app: str, placement: Any, replicas: Sequence[Any], default: Any):
    """An app runs somewhere: its own placement or replicas, or the scenario's default."""
    if placement is None and not replicas and default is None:
        yield RuleError(
            "no placement: give 'placement:' here or at the top level", subject=f"app '{app}'"
        )


def scenario_apps(
    workload: Sequence[Any], models: Collection[str], nodes: Collection[str], default: Any
):
    """The scenario-level rules over built entries (``Scenario.__post_init__``)."""
    yield from app_names_unique([entry.app for entry in workload])
    for i, entry in enumerate(workload):
        for error in app_names_known(entry.app, entry.model, entry.source, models, nodes):
            yield error.within("workload", i)
        for error in app_has_placement(entry.app, entry.placement, entry.replicas, default):
            yield error.within("workload", i)
        for error in online_heft(
            entry.app, entry.placement, entry.replicas, default, entry.transfer_timeout_s
        ):
            yield error.within("workload", i)


# -- the network ---------------------------------------------------------------------------
def link_ends_known(link: str, ends: Sequence[Any], nodes: Collection[str]):
    """A link joins nodes of its scenario; each unknown end is reported at its index."""
    names = ", ".join(collapse_members([str(n) for n in nodes]))
    for i, end in enumerate(ends):
        if isinstance(end, str) and end and end not in nodes:
            yield RuleError(
                f"unknown node '{end}'; nodes: {names}", ("ends", i), end, nodes, f"link '{link}'"
            )


#: a fleet member's name, ``phone[17]`` (simulator.spec.fleets)
_MEMBER_NAME = re.compile(r"^(.*)\[([0-9]+)\]$")


def collapse_members(names: list[str]) -> list[str]:
    """Names for a message, each fleet's members as one ``phone[0..199]`` entry."""
    out: list[str] = []
    counts: dict[str, int] = {}
    for name in names:
        match = _MEMBER_NAME.match(name)
        if match is None:
            out.append(name)
        elif match.group(1) not in counts:
            counts[match.group(1)] = 1
            out.append(match.group(1))
        else:
            counts[match.group(1)] += 1
    return [f"{n}[0..{counts[n] - 1}]" if n in counts else n for n in out]


def collapse_member_units(unit_ids: list[str]) -> list[str]:
    """Unit ids for a message, a fleet's members' units as one ``phone[i].cpu``."""
    out: dict[str, None] = {}
    for uid in unit_ids:
        node, _, unit = uid.rpartition(".")
        member = _MEMBER_NAME.match(node)
        out[f"{member.group(1)}[i].{unit}" if member else uid] = None
    return list(out)


def node_document_path(node: str) -> str:
    """``nodes.edge``; for a fleet member ``nodes.phone`` (its fields are written once,
    in the fleet's template)."""
    member = _MEMBER_NAME.match(node)
    return f"nodes.{member.group(1) if member else node}"


def app_node_phrase(node: str) -> str:
    """``an app on node 'edge'``, or for a fleet member ``the apps of fleet 'phone'``
    (one message for all the members, whose placements are written once)."""
    member = _MEMBER_NAME.match(node)
    return f"the apps of fleet '{member.group(1)}'" if member else f"an app on node '{node}'"


# -- translating a breach into a problem of a YAML document -----------------------------------
def energy_window_ordered(window_s: Sequence[float] | None) -> Iterator[RuleError]:
    """A fixed energy window ``(start_s, end_s)`` ends after it starts."""
    if window_s is not None and not window_s[1] > window_s[0]:
        yield RuleError(
            f"energy_window ends at {window_s[1]:g} s, not after its start "
            f"{window_s[0]:g} s; give end_s > start_s",
            ("energy_window", "end_s"),
            window_s[1],
        )


def report(ctx: Any, error: RuleError, loc: Any, container: Any) -> None:
    """Add ``error`` to ``ctx`` as a problem at ``loc`` + its path.

    ``loc`` (a :class:`~simulator.schema.Loc`) is where the checked thing sits and
    ``container`` its raw (line-marked) YAML value; the path is walked through it so
    the problem carries the file and line of the value at fault.
    """
    for key in error.path:
        loc = loc.child(container, key)
        try:
            container = container[key]
        except (KeyError, IndexError, TypeError):
            container = None
    ctx.problem(loc, error.message, error.suggestion)
