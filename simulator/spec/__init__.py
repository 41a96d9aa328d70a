"""Scenario specs: YAML in, validated frozen :class:`Scenario` out (SI units inside).

The names are imported on first use (:mod:`simulator.lazy`), so that the light modules
of this package (``paths``, ``yamlio``) do not import the loader's graph and placement
dependencies.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the re-exports, listed in __all__)

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.lazy import lazy_exports

_EXPORTS = {
    "Scenario": "simulator.spec.scenario",
    "load_scenario": "simulator.spec.loader",
    "parse_scenario": "simulator.spec.loader",
    "validate_library": "simulator.spec.loader",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from simulator.spec.loader import load_scenario, parse_scenario, validate_library
    from simulator.spec.scenario import Scenario

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
