"""The ``failures:`` section of the scenario format, and its build into FailureSpecs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.errors import SocsimError
from simulator.failures import FailureSpec
from simulator.limits import MAX_HORIZON_S
from simulator.platform import Platform
from simulator.rules import collapse_member_units, collapse_members
from simulator.schema import Context, Field, ListOf, Loc, Number, Record, Text, nearest

_TIME_S = Number("s", ge=0, le=MAX_HORIZON_S)
_SPAN_S = Number("s", gt=0, le=MAX_HORIZON_S)
#: Most failure entries of one scenario (each may draw many intervals).
MAX_FAILURES = 10_000

FAILURE = Record(
    {
        "target": Field(
            Text(),
            doc="a node (all its units and links) or a unit 'node.unit'; a fleet's member "
            "is '<fleet>[i]' (e.g. phone[3], phone[3].cpu)",
        ),
        "at_s": Field(_TIME_S, default=None, doc="one failure starting then ..."),
        "for_s": Field(_SPAN_S, default=None, doc="... lasting this long"),
        "mtbf_s": Field(_SPAN_S, default=None, doc="or: mean up time (exponential) ..."),
        "mttr_s": Field(_SPAN_S, default=None, doc="... mean down time (exponential) ..."),
        "until_s": Field(_TIME_S, default=None, doc="... no failure starts after this"),
    },
    exclusive=(("at_s", "mtbf_s"),),
    name="failure",
)
FAILURES = Field(
    ListOf(FAILURE, max_len=MAX_FAILURES),
    default=[],
    doc="nodes and units down over intervals (docs/failures.md)",
)

#: a fleet member's node name, ``phone[17]`` (simulator.spec.fleets)

#: the keys each form needs, by the key that picks the form
_NEEDS = {"at_s": ("for_s",), "mtbf_s": ("mttr_s", "until_s")}


def build_failures(
    checked: Sequence[Mapping[str, Any]], raw: Any, platform: Platform, ctx: Context
) -> tuple[FailureSpec, ...]:
    """The scenario's FailureSpecs; each problem reported at its YAML path."""
    out = []
    for k, entry in enumerate(checked):
        loc = Loc("failures").child(raw, k)
        item = raw[k]
        target = entry["target"]
        if target not in platform.nodes and target not in platform.unit_ids:
            choices = [*platform.nodes, *platform.unit_ids]
            ctx.problem(
                loc.child(item, "target"),
                f"unknown failure target '{target}'; a node "
                f"({', '.join(collapse_members(list(platform.nodes)))}) or a unit "
                f"'node.unit' ({', '.join(collapse_member_units(list(platform.unit_ids)))}); "
                "a fleet's member is named '<fleet>[i]' (docs/fleets.md)",
                nearest(target, choices),
            )
            continue
        form = "at_s" if entry["at_s"] is not None else "mtbf_s"
        other = [key for key in ("for_s", "mttr_s", "until_s") if key not in _NEEDS[form]]
        missing = [key for key in _NEEDS[form] if entry[key] is None]
        extra = [key for key in other if entry[key] is not None]
        if missing or extra:
            wanted = "at_s with for_s" if form == "at_s" else "mtbf_s with mttr_s and until_s"
            what = f"missing {', '.join(missing)}" if missing else f"{', '.join(extra)} not used"
            ctx.problem(loc, f"a failure gives {wanted} ({what})")
            continue
        try:
            out.append(FailureSpec(**entry))
        except SocsimError as exc:
            ctx.problem(loc, str(exc))
    return tuple(out)
