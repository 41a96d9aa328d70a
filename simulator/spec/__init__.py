"""Scenario specs: YAML in, validated frozen :class:`Scenario` out (SI units inside)."""

from simulator.spec.loader import load_scenario, parse_scenario, validate_library
from simulator.spec.scenario import Scenario

__all__ = ["Scenario", "load_scenario", "parse_scenario", "validate_library"]
