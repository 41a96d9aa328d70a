"""Placement: policies (pure functions) deciding which unit runs each op."""

from simulator.placement import exhaustive as _exhaustive  # noqa: F401  (registers policies)
from simulator.placement import listsched as _listsched  # noqa: F401
from simulator.placement import mincut as _mincut  # noqa: F401
from simulator.placement import peft as _peft  # noqa: F401
from simulator.placement import runtime as _runtime  # noqa: F401
from simulator.placement import split as _split  # noqa: F401
from simulator.placement import static as _static  # noqa: F401
from simulator.placement.base import (
    POLICIES,
    Placement,
    PlacementSpec,
    check_placement,
    place,
)
from simulator.placement.estimate import Estimate, estimate
from simulator.placement.plan import ExecutionPlan, compile_plan

__all__ = [
    "POLICIES",
    "Estimate",
    "ExecutionPlan",
    "Placement",
    "PlacementSpec",
    "check_placement",
    "compile_plan",
    "estimate",
    "place",
]
from simulator.placement import coexec as _coexec  # noqa: F401
from simulator.placement import edgent as _edgent  # noqa: F401  (registered last)
