"""Unit-scheduler keys without a call per op (``scheduling.by_request``): the engine
builds an op's key from its request's part and the op's position, and must order every
unit's queue exactly as calling the scheduler's key function per op does.

Hand numbers: one NPU at 1 GFLOP/s; a model forks, a (1 MFLOP, 1 ms) -> b (2 ms) and
a -> c (3 ms), with empty tensors. Two ``bg`` requests at t = 0 (ids 0, 1; priority 0,
deadline 100 ms) and one ``cam`` request at 0.5 ms (id 2; priority 5, deadline 10 ms).
"""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.engine import simulate
from simulator.scheduling import SCHEDULERS, by_request, fcfs
from simulator.spec import parse_scenario

EXACT = 1e-12


def _op(name: str, mflops: float) -> dict:
    return {"name": name, "kind": "conv", "flops": mflops * 1e6, "output_elems": 0}


def fork_doc(scheduler: str) -> dict:
    model = {
        "ops": [_op("a", 1), _op("b", 2), _op("c", 3)],
        "edges": [{"src": "a", "dst": "b"}, {"src": "a", "dst": "c"}],
    }
    return {
        "name": "fork",
        "seed": 1,
        "scheduler": scheduler,
        "nodes": {"phone": {"units": {"npu": {"kind": "npu", "peak_gflops": {"fp32": 1}}}}},
        "models": {"fork": model},
        "workload": [
            {
                "app": app,
                "model": "fork",
                "source": "phone",
                "priority": priority,
                "deadline_ms": deadline_ms,
                "arrival": {"process": "trace", "times_ms": times_ms},
            }
            for app, priority, deadline_ms, times_ms in (
                ("bg", 0, 100, [0, 0]),
                ("cam", 5, 10, [0.5]),
            )
        ],
        "placement": {"policy": "single", "unit": "npu"},
    }


def starts_ms(result) -> list[tuple[int, str, float]]:
    ops = result.ops.sort_values("start_s")
    return [
        (r, o, round(s * 1e3, 9))
        for r, o, s in zip(ops.request_id, ops.op, ops.start_s, strict=True)
    ]


def test_by_request_key_is_the_part_then_the_position():
    assert fcfs(7, 3, 5, 0.25, 0.1) == (7, 3)
    assert fcfs.request_part(7, 5, 0.25) == (7,)
    assert SCHEDULERS.get("edf").function(7, 3, 5, 0.25, 0.1) == (0.25, 7, 3)
    assert SCHEDULERS.get("priority").function(7, 3, 5, 0.25, 0.1) == (-5, 7, 3)
    newest = by_request(lambda rid, priority, deadline_at_s: (-rid,))
    assert newest(4, 1, 0, 0.0, 0.0) == (-4, 1)
    assert "placement order" in SCHEDULERS.get("fcfs").doc  # the part's name and docs
    # a scheduler reading ready_s is called per op: it has no request part
    assert not hasattr(SCHEDULERS.get("ready_order").function, "request_part")


def test_fcfs_by_hand():
    """Request by request (ids 0, 1, 2), each request's ops in plan order on the unit."""
    assert starts_ms(simulate(parse_scenario(fork_doc("fcfs")))) == [
        (0, "a", 0.0),
        (0, "b", 1.0),
        (0, "c", 3.0),
        (1, "a", 6.0),
        (1, "b", 7.0),
        (1, "c", 9.0),
        (2, "a", 12.0),
        (2, "b", 13.0),
        (2, "c", 15.0),
    ]


def test_priority_by_hand():
    """The camera's ops go first once its a is ready (at 0.5 ms, during r0.a)."""
    assert starts_ms(simulate(parse_scenario(fork_doc("priority"))))[:5] == [
        (0, "a", 0.0),
        (2, "a", 1.0),
        (2, "b", 2.0),
        (2, "c", 4.0),
        (0, "b", 7.0),
    ]


@pytest.mark.parametrize("scheduler", ["fcfs", "priority", "edf"])
def test_engine_orders_as_the_called_key(scheduler):
    """The same tables with the request part as with the same key function registered
    without its ``request_part`` (called per op)."""
    key = SCHEDULERS.get(scheduler).function
    called = f"{scheduler}_called_per_op"
    SCHEDULERS.add(called, lambda *args: key(*args))
    try:
        fast = simulate(parse_scenario(fork_doc(scheduler)))
        slow = simulate(parse_scenario(fork_doc(called)))
    finally:
        SCHEDULERS._entries.pop(called, None)  # leave the registry as other tests know it
    pd.testing.assert_frame_equal(fast.ops, slow.ops)
    pd.testing.assert_frame_equal(fast.requests, slow.requests)
