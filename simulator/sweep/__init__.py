"""Parameter sweeps: expand a spec into points, run them on an executor, one tidy table.

Typical use::

    from simulator.sweep import run_sweep, load_sweep_table
    run_sweep("scenarios/sweeps/neurosurgeon_map.yaml", "runs/map")
    table = load_sweep_table("runs/map")

The names are imported on first use (:mod:`simulator.lazy`): ``socsim sweep --help``
imports the argument definitions, not the engine.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the re-exports, listed in __all__)

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.lazy import lazy_exports

_EXPORTS = {
    "DESIGNS": "simulator.sweep.pointsets",
    "EXECUTORS": "simulator.sweep.executors",
    "Parameter": "simulator.sweep.design",
    "PointResolver": "simulator.sweep.points",
    "PreparedSweep": "simulator.sweep.runner",
    "SUMMARY_KEYS": "simulator.sweep.execute",
    "SweepBusyError": "simulator.sweep.store",
    "SweepFolderError": "simulator.sweep.store",
    "SweepJournalError": "simulator.sweep.store",
    "SweepSpec": "simulator.sweep.design",
    "Task": "simulator.sweep.execute",
    "check_values": "simulator.sweep.points",
    "expand": "simulator.sweep.pointsets",
    "fast_path_applies": "simulator.sweep.execute",
    "load_sweep_table": "simulator.sweep.store",
    "parse_path": "simulator.sweep.points",
    "point_seed": "simulator.sweep.pointsets",
    "prepare_sweep": "simulator.sweep.runner",
    "range_values": "simulator.sweep.design",
    "run_prepared": "simulator.sweep.runner",
    "run_sweep": "simulator.sweep.runner",
    "run_task": "simulator.sweep.execute",
    "set_path": "simulator.sweep.points",
    "sweep_spec": "simulator.sweep.design",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from simulator.sweep.design import Parameter, SweepSpec, range_values, sweep_spec
    from simulator.sweep.execute import SUMMARY_KEYS, Task, fast_path_applies, run_task
    from simulator.sweep.executors import EXECUTORS
    from simulator.sweep.points import PointResolver, check_values, parse_path, set_path
    from simulator.sweep.pointsets import DESIGNS, expand, point_seed
    from simulator.sweep.runner import PreparedSweep, prepare_sweep, run_prepared, run_sweep
    from simulator.sweep.store import (
        SweepBusyError,
        SweepFolderError,
        SweepJournalError,
        load_sweep_table,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
