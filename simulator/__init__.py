"""socsim: discrete-event simulation of AI inference on heterogeneous SoCs, edge and cloud.

Typical use::

    from simulator import load_scenario, simulate
    result = simulate(load_scenario("scenarios/examples/alexnet_phone_cloud.yaml"))
    result.summary["latency_p50_s"], result.requests, result.units
"""

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
from simulator.placement import POLICIES, Placement, PlacementSpec, compile_plan, estimate, place
from simulator.platform import CostOracle, Platform
from simulator.results import RunResult
from simulator.spec import Scenario, load_scenario, parse_scenario
from simulator.workload import ARRIVALS

__version__ = "0.1.0"

__all__ = [
    "ARRIVALS",
    "POLICIES",
    "CostOracle",
    "Edge",
    "ModelError",
    "ModelGraph",
    "Op",
    "Placement",
    "PlacementError",
    "PlacementSpec",
    "Platform",
    "Problem",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "SocsimError",
    "build_zoo_model",
    "compile_plan",
    "estimate",
    "load_scenario",
    "parse_scenario",
    "place",
    "plan_apps",
    "simulate",
    "zoo_names",
]
