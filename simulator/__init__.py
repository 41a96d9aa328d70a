"""socsim: discrete-event simulation of AI inference on heterogeneous SoCs, edge and cloud.

Typical use::

    from simulator import load_scenario, simulate
    result = simulate(load_scenario("scenarios/examples/alexnet_phone_cloud.yaml"))
    result.summary["latency_p50_s"], result.requests, result.units

The public names below are imported on first use (module ``__getattr__``, PEP 562):
``import simulator`` and every ``import simulator.x`` run this file, and importing the
engine, pandas, networkx and SimPy eagerly here cost ``socsim --help`` about 2 s.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the re-exports, listed in __all__)

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.lazy import lazy_exports

#: public name -> the module that defines it (imported when the name is first read)
_EXPORTS = {
    "ARRIVALS": "simulator.workload",
    "POLICIES": "simulator.placement",
    "CostOracle": "simulator.platform",
    "Edge": "simulator.graph",
    "ModelError": "simulator.errors",
    "ModelGraph": "simulator.graph",
    "Op": "simulator.graph",
    "Placement": "simulator.placement",
    "PlacementError": "simulator.errors",
    "PlacementSpec": "simulator.placement",
    "Platform": "simulator.platform",
    "Problem": "simulator.errors",
    "RunResult": "simulator.results",
    "Scenario": "simulator.spec",
    "ScenarioError": "simulator.errors",
    "SimulationError": "simulator.errors",
    "SocsimError": "simulator.errors",
    "build_zoo_model": "simulator.graph.zoo",
    "compile_plan": "simulator.placement",
    "estimate": "simulator.placement",
    "load_scenario": "simulator.spec",
    "parse_scenario": "simulator.spec",
    "place": "simulator.placement",
    "plan_apps": "simulator.engine",
    "simulate": "simulator.engine",
    "zoo_names": "simulator.graph.zoo",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from simulator.engine import plan_apps, simulate
    from simulator.errors import (
        ModelError,
        PlacementError,
        Problem,
        ScenarioError,
        SimulationError,
        SocsimError,
    )
    from simulator.graph import Edge, ModelGraph, Op
    from simulator.graph.zoo import build_zoo_model, zoo_names
    from simulator.placement import (
        POLICIES,
        Placement,
        PlacementSpec,
        compile_plan,
        estimate,
        place,
    )
    from simulator.platform import CostOracle, Platform
    from simulator.results import RunResult
    from simulator.spec import Scenario, load_scenario, parse_scenario
    from simulator.workload import ARRIVALS


_lazy_attribute, __dir__ = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed package's metadata; written once, in setup.cfg
        from simulator.version import __version__

        return __version__
    return _lazy_attribute(name)
