"""Memory as a monitored indicator (docs/memory.md): the ``memory`` table at hand-computed
times, nodes' pools under ``refuse`` (a placement error; a request that does not fit waits)
and ``allow``, and the invariant that a refusing pool is never exceeded.

``small_soc_document`` (tests/conftest.py): op a (cpu, 1 ms) reads the 500-element input
(2,000 B) and writes 1,000 elements (4,000 B), with 100 params (400 B of weights); b (gpu,
0.5 ms) writes 2,000 B; c (cpu, 1 ms) writes 40 B. Moves a→gpu and b→cpu take 100 µs sync
+ bytes / 1 GB/s: 104 µs and 102 µs. So a runs 0 .. 1 ms, b 1.104 .. 1.604 ms, c 1.706 ..
2.706 ms.
"""

from __future__ import annotations

import copy
import math

import pytest
from conftest import build, small_soc_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.engine import plan_replicas, simulate
from simulator.errors import PlacementError, ScenarioError
from simulator.placement.check import plan_problems
from simulator.placement.memory_pool import activation_bound

MS = 1e-3
#: what one request can hold on the phone: outputs 4000 + 2000 + 40, inputs moved in
#: 2000 (the request input) + 4000 (a -> gpu) + 2000 (b -> cpu)
BOUND_B = 4000 + 2000 + 40 + 2000 + 4000 + 2000
WEIGHTS_B = 400


def at(memory, unit: str, t: float) -> tuple[int, int]:
    """(unit bytes, node bytes) in use just after ``t`` (the last row at or before it)."""
    rows = memory[(memory["unit"] == unit) & (memory["time_s"] <= t + 1e-12)]
    last = rows.iloc[-1]
    node_rows = memory[memory["time_s"] <= t + 1e-12].iloc[-1]
    return int(last["unit_bytes"]), int(node_rows["node_bytes"])


def series(doc: dict) -> dict:
    doc["memory_series"] = True
    return doc


def test_memory_table_at_hand_computed_times():
    result = simulate(build(series(small_soc_document())))
    memory = result.memory
    # t = 0: weights 400 + the input 2000 + a's output 4000 on the cpu
    assert at(memory, "phone.cpu", 0.0) == (WEIGHTS_B + 2000 + 4000, 6400)
    # a ended: its input freed, its output waits for the move
    assert at(memory, "phone.cpu", 1.0 * MS) == (WEIGHTS_B + 4000, 4400)
    # the move arrived at 1.104 ms: the cpu holds the weights, the gpu a's output and b's
    assert at(memory, "phone.cpu", 1.104 * MS) == (WEIGHTS_B, 6400)
    assert at(memory, "phone.gpu", 1.104 * MS) == (4000 + 2000, 6400)
    # b ended at 1.604 ms: its input freed
    assert at(memory, "phone.gpu", 1.604 * MS) == (2000, 2400)
    # b's output reached the cpu at 1.706 ms and c started: 2000 + 40 beside the weights
    assert at(memory, "phone.cpu", 1.706 * MS) == (WEIGHTS_B + 2040, 2440)
    assert at(memory, "phone.gpu", 1.706 * MS) == (0, 2440)
    # c ended: only the weights remain
    assert at(memory, "phone.cpu", 2.706 * MS) == (WEIGHTS_B, WEIGHTS_B)
    row = memory.iloc[-1]
    assert (row["weights_bytes"], row["activation_bytes"]) == (WEIGHTS_B, 0)
    assert math.isinf(row["node_pool_bytes"])
    # the peak the units table reports is the table's maximum
    units = result.units.set_index("unit")
    for uid, mine in memory.groupby("unit"):
        assert mine["unit_bytes"].max() == units.loc[uid, "peak_memory_bytes"]


def test_memory_table_is_left_empty_below_trace_full_or_unasked():
    for level in ("summary", "none"):
        assert simulate(build(series(small_soc_document())), trace=level).memory.empty
    assert simulate(build(small_soc_document())).memory.empty


def test_activation_bound_of_the_chain():
    scenario = build(small_soc_document())
    plan = plan_replicas(scenario)["app"][0]
    assert activation_bound(plan, scenario.platform) == {"phone": BOUND_B}


def with_pool(memory_gb: float, policy: str = "refuse", **workload) -> dict:
    doc = series(small_soc_document())
    doc["nodes"]["phone"]["memory_gb"] = memory_gb
    doc["nodes"]["phone"]["memory_policy"] = policy
    doc["workload"][0].update(workload)
    return doc


def test_weights_that_do_not_fit_are_an_error_at_the_placement_path_with_the_fix():
    doc = with_pool(1e-6)  # 1,000 B, below the 400 B of weights + a request's 14,040 B
    doc["models"]["chain"]["ops"][0]["params"] = 2_000_000  # 8 MB of fp32 weights
    scenario = build(doc)
    with pytest.raises(PlacementError, match="8 MB of weights on node 'phone' do not fit its 1 kB"):
        simulate(scenario)
    (problem,) = plan_problems(scenario)
    assert problem.path == "placement"
    assert "memory_gb" in problem.message and "fix: place fewer ops on 'phone'" in problem.message
    assert "give nodes.phone.memory_gb" in problem.message
    assert "memory_policy: allow" in problem.message
    # a fleet's members: their pool is the template's field, one problem for the fleet
    doc["nodes"]["phone"]["fleet"] = {"count": 3}
    (problem,) = plan_problems(build(doc))
    assert "on node 'phone[0]'" in problem.message
    assert "give nodes.phone.memory_gb" in problem.message
    assert problem.message.endswith("(and 2 more member app(s) of this fleet entry)")


def test_weights_and_one_request_that_do_not_fit_are_an_error_too():
    scenario = build(with_pool((WEIGHTS_B + BOUND_B - 1) * 1e-9))
    with pytest.raises(PlacementError, match=r"14\.04 kB of activations one request"):
        simulate(scenario)
    simulate(build(with_pool((WEIGHTS_B + BOUND_B) * 1e-9)))  # exactly fits


def test_a_request_that_does_not_fit_waits_instead_of_being_dropped():
    # regression: room for one request at a time, one every 0.5 ms, each 2.706 ms long;
    # admission used to reserve each arrival's bound and dropped requests 1 to 5
    doc = with_pool(
        (WEIGHTS_B + BOUND_B) * 1e-9, count=7, arrival={"process": "periodic", "period_ms": 0.5}
    )
    result = simulate(build(doc))
    req = result.requests.set_index("request_id")
    assert (req["status"] == "completed").all()
    # each starts when the one before completes (its op parked until then): k + 1 runs
    for k in range(7):
        assert req.loc[k, "start_s"] == pytest.approx(k * 2.706 * MS, abs=1e-12)
        assert req.loc[k, "finish_s"] == pytest.approx((k + 1) * 2.706 * MS, abs=1e-12)
    # one request at a time: the node holds one request's peak (the table by hand above);
    # the inputs of those waiting are not in the pool yet
    assert result.memory["node_bytes"].max() == 6400


def test_allow_runs_over_the_pool_and_the_table_shows_it():
    doc = with_pool(5e-6, "allow", count=3, arrival={"process": "periodic", "period_ms": 0.5})
    result = simulate(build(doc))
    assert (result.requests["status"] == "completed").all()
    memory = result.memory
    assert (memory["node_pool_bytes"] == 5000).all()
    assert memory["node_bytes"].max() > 5000


def test_memory_schema_errors():
    doc = with_pool(6)
    doc["nodes"]["phone"]["memory_policy"] = "swap"
    with pytest.raises(ScenarioError, match=r"nodes\.phone\.memory_policy.*refuse"):
        build(doc)
    doc = with_pool(-1)
    with pytest.raises(ScenarioError, match=r"nodes\.phone\.memory_gb"):
        build(doc)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.integers(1, 12),
    period_ms=st.floats(0.05, 3),
    room=st.integers(1, 4),
    spare_b=st.integers(0, 5000),
)
def test_a_refusing_pool_is_never_exceeded_and_nothing_is_lost(requests, period_ms, room, spare_b):
    pool_b = WEIGHTS_B + room * BOUND_B + spare_b
    doc = with_pool(
        pool_b * 1e-9, count=requests, arrival={"process": "periodic", "period_ms": period_ms}
    )
    result = simulate(build(copy.deepcopy(doc)))
    assert result.memory["node_bytes"].max() <= pool_b
    # every request fits alone: none is dropped, whatever the load
    assert len(result.requests) == requests
    assert (result.requests["status"] == "completed").all()
