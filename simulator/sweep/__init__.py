"""Parameter sweeps: expand a spec into points, run them on an executor, one tidy table.

Typical use::

    from simulator.sweep import run_sweep, load_sweep_table
    run_sweep("scenarios/sweeps/neurosurgeon_map.yaml", "runs/map")
    table = load_sweep_table("runs/map")
"""

from simulator.sweep.design import (
    DESIGNS,
    Parameter,
    SweepSpec,
    expand,
    point_seed,
    range_values,
    sweep_spec,
)
from simulator.sweep.execute import SUMMARY_KEYS, Task, fast_path_applies, run_task
from simulator.sweep.executors import EXECUTORS
from simulator.sweep.points import PointResolver, check_values, parse_path, set_path
from simulator.sweep.runner import PreparedSweep, prepare_sweep, run_prepared, run_sweep
from simulator.sweep.store import (
    SweepBusyError,
    SweepFolderError,
    SweepJournalError,
    load_sweep_table,
)

__all__ = [
    "DESIGNS",
    "EXECUTORS",
    "SUMMARY_KEYS",
    "Parameter",
    "PointResolver",
    "PreparedSweep",
    "SweepBusyError",
    "SweepFolderError",
    "SweepJournalError",
    "SweepSpec",
    "Task",
    "check_values",
    "expand",
    "fast_path_applies",
    "load_sweep_table",
    "parse_path",
    "point_seed",
    "prepare_sweep",
    "range_values",
    "run_prepared",
    "run_sweep",
    "run_task",
    "set_path",
    "sweep_spec",
]
