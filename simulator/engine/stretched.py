"""An op whose time varies or a background load slows (docs/stochastic.md): its start and
its energy, for :class:`~simulator.engine.dataflow.Dataflow`.

Such an op runs for its real time (:class:`~simulator.engine.variation.Stretch`) instead
of the cost model's, or pulls its node's DRAM that long, and its unit draws the op's busy
power over the whole real time. Kept apart from the dataflow's per-op path, which
plain ops take without looking here.
"""

from __future__ import annotations

from simulator.engine.dram import Stream as DramStream
from simulator.engine.state import OpStep, Request


def stretched_start(
    step: OpStep,
    request: Request,
    i: int,
    now: float,
    duration_s: float,
    real_s: float,
    fixed_s: float,
) -> float | DramStream:
    """Start op ``i`` of ``request`` (its ``step``) now: its real time ``real_s`` (s)
    instead of the cost model's ``duration_s``, or its DRAM stream lasting that long (the
    fixed part ``fixed_s`` stretched alike). The real time is noted on the request."""
    stretched_s = float(real_s)
    if request.stretched_s is None:
        request.stretched_s = [0.0] * len(request.steps)
    request.stretched_s[i] = stretched_s
    if step.dram is None or duration_s <= fixed_s:
        return stretched_s
    fixed_s = fixed_s * (stretched_s / duration_s)
    return step.dram.begin(now, stretched_s, fixed_s, step.dram_bytes)


def stretched_energy(
    step: OpStep, request: Request, i: int, start_s: float, end_s: float
) -> tuple[float, int, float]:
    """(energy J, level or -1, DRAM stall s) of stretched op ``i`` of ``request``, which
    ran over ``[start_s, end_s]``: the unit draws the op's busy power over its whole real
    time."""
    if step.dvfs is not None:
        levels = request.levels
        assert levels is not None  # set when the op started
        level = levels[i]
        power_w = step.dvfs.busy_w[level] * step.core_share
    else:
        level = -1
        power_w = step.energy_j / step.duration_s if step.duration_s > 0 else 0.0
    stretched = request.stretched_s
    assert stretched is not None  # set when the op started
    ran_s = stretched[i]  # its real time, unless shared DRAM stalled it
    stall_s = 0.0
    if step.dram is not None:  # exact 0 when unstalled, as the dataflow's plain rule
        stall_s = max(end_s - (start_s + ran_s), 0.0)
        if stall_s:
            ran_s = end_s - start_s
    return power_w * ran_s, level, stall_s
