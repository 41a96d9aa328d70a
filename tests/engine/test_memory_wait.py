"""A request waits for room in a refusing pool from its first op start (docs/memory.md).

The model is ``small_soc_document``'s chain with every op on the phone's cpu (one unit):
a (1 ms) reads the 2,000 B input and writes 4,000 B, b (2 ms: 2 MFLOP at 1 GFLOP/s)
writes 2,000 B, c (1 ms) writes 40 B; 400 B of weights. One request's bound on the phone
is 4,000 + 2,000 + 40 + 2,000 (the input moved in) = 8,040 B; the pool holds the weights
and two bounds. Five requests arrive at t = 0.
"""

from __future__ import annotations

import pytest
from conftest import build, small_soc_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.engine import Engine, plan_replicas, simulate
from simulator.errors import SimulationError
from simulator.platform import CostOracle

MS = 1e-3
WEIGHTS_B = 400
BOUND_B = 4000 + 2000 + 40 + 2000
POOL_B = WEIGHTS_B + 2 * BOUND_B


def one_unit(pool_b: int, policy: str = "refuse", times_ms=(0,) * 5, scheduler="ready_order"):
    doc = small_soc_document()
    doc["memory_series"] = True
    doc["placement"]["rules"] = []  # every op on the cpu
    doc["nodes"]["phone"]["memory_gb"] = pool_b * 1e-9
    doc["nodes"]["phone"]["memory_policy"] = policy
    doc["workload"][0].update(
        count=len(times_ms), arrival={"process": "trace", "times_ms": list(times_ms)}
    )
    doc["scheduler"] = scheduler
    return doc


def engine_of(doc: dict) -> Engine:
    """The engine of ``doc`` (its memory gate and ledger readable after ``run``)."""
    scenario = build(doc)
    oracle = CostOracle(scenario.platform)
    return Engine(scenario, plan_replicas(scenario, oracle), oracle)


def test_five_at_once_with_room_for_two_none_dropped_by_hand():
    # ready_order: the op ready first runs first, so the cpu starts every queued a before
    # any b. R0 is let in at 0, R1 at 1 ms (a: 0-1, 1-2 ms); at 2 ms R2's a starts but the
    # pool has 0 B left: it is parked, and R3's and R4's behind it; the cpu runs R0.b 2-4,
    # R1.b 4-6, R0.c 6-7. R0 completes at 7 ms: R2 is let in and its a runs 7-8; R1.c
    # 8-9; R3 is let in at 9 ms: a 9-10; R2.b 10-12, R3.b 12-14, R2.c 14-15; R4 in at
    # 15 ms: a 15-16; R3.c 16-17; R4.b 17-19, R4.c 19-20. The cpu is never idle: 5 x 4 ms.
    result = simulate(build(one_unit(POOL_B)))
    req = result.requests.set_index("request_id")
    assert (req["status"] == "completed").all()
    assert list(req["start_s"] / MS) == pytest.approx([0, 1, 7, 9, 15], abs=1e-9)
    assert list(req["finish_s"] / MS) == pytest.approx([7, 9, 15, 17, 20], abs=1e-9)
    # the peak: 400 + R0 (a's output 4,000) + R1 (input 2,000 + a's output 4,000) at 1 ms,
    # and again 400 + R0 (4,000 read by b + 2,000) + R1 (4,000) at 2 ms: 10,400 B
    memory = result.memory
    assert memory["node_bytes"].max() == 10_400
    assert memory["node_pool_bytes"].iloc[0] == POOL_B
    # the peak first reached at 1 ms, when R1's a started (its input entered the pool)
    first = memory[memory["node_bytes"] == 10_400]["time_s"].iloc[0]
    assert first == pytest.approx(1 * MS, abs=1e-12)


def test_the_same_overload_under_allow_starts_all_five_over_the_pool():
    # nothing waits: the five a's run first (0-5 ms); at 4 ms R0..R3 hold a's output
    # (4 x 4,000) and R4 its input and a's output: 400 + 16,000 + 6,000 = 22,400 B, over
    # the 16,480 B pool
    result = simulate(build(one_unit(POOL_B, "allow")))
    req = result.requests
    assert (req["status"] == "completed").all()
    assert list(req["start_s"] / MS) == pytest.approx([0, 1, 2, 3, 4], abs=1e-9)
    assert result.memory["node_bytes"].max() == 22_400


def test_fcfs_runs_one_request_at_a_time_so_nothing_waits_for_memory():
    # fcfs: a request's ops run before the next request's, so only one is ever started;
    # the inputs queued behind it are not in the pool: the peak is one request's 6,400 B
    engine = engine_of(one_unit(POOL_B, scheduler="fcfs"))
    record = engine.run()
    assert engine.memory.waited == 0
    assert engine.memory.low_free == {"phone": BOUND_B}  # one bound reserved at most
    assert max(tally.peak_memory_bytes for tally in record.ledger.tallies.values()) == 6400


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gaps_ms=st.lists(st.sampled_from((0.0, 0.25, 1.0, 3.0)), min_size=1, max_size=8),
    room=st.integers(1, 3),
    spare_b=st.integers(0, BOUND_B - 1),
    scheduler=st.sampled_from(("fcfs", "ready_order", "priority", "edf")),
)
def test_reservations_never_exceed_the_pool_and_every_request_completes(
    gaps_ms, room, spare_b, scheduler
):
    times, t = [], 0.0
    for gap in gaps_ms:
        t += gap
        times.append(t)
    pool_b = WEIGHTS_B + room * BOUND_B + spare_b
    engine = engine_of(one_unit(pool_b, times_ms=times, scheduler=scheduler))
    record = engine.run()
    assert min(engine.memory.low_free.values()) >= 0  # reserved <= pool at every instant
    # all released at the end (the pool is memory_gb x 1e9: a float)
    assert engine.memory.free["phone"] == pytest.approx(pool_b - WEIGHTS_B, abs=1e-6)
    assert record.requests.completed == len(times)  # none dropped, none stuck
    peak = max(t.peak_memory_bytes for t in record.ledger.tallies.values())
    assert peak <= pool_b


def test_an_overloaded_app_does_not_hold_memory_for_its_queued_requests():
    # app a: five chains at t = 0 on the cpu (fcfs: one at a time, 4 ms each); app b: one
    # chain on the gpu at 0.5 ms (a 0.25 ms, b 0.5 ms, c 0.25 ms). The pool holds both
    # deployments' weights (400 B each) and two bounds: a's running request and b's. The
    # requests of a queued for the cpu reserve nothing, so b starts on arrival and ends
    # 1 ms later; reserving at arrival would have filled the pool with a's queue.
    doc = one_unit(2 * WEIGHTS_B + 2 * BOUND_B, scheduler="fcfs")
    gpu_app = dict(doc["workload"][0], app="b", count=1)
    gpu_app["arrival"] = {"process": "trace", "times_ms": [0.5]}
    gpu_app["placement"] = {"policy": "manual", "rules": [], "default": "gpu"}
    doc["workload"].append(gpu_app)
    engine = engine_of(doc)
    record = engine.run()
    assert engine.memory.waited == 0
    finish = {(r.app.entry.app, r.rid): r.finish_s for r in record.requests.records()}
    b = [t for (app, _), t in finish.items() if app == "b"]
    assert b == [pytest.approx(1.5 * MS, abs=1e-12)]
    a = sorted(t for (app, _), t in finish.items() if app == "app")
    assert a == pytest.approx([4 * MS, 8 * MS, 12 * MS, 16 * MS, 20 * MS], abs=1e-12)


def test_a_bound_that_could_never_fit_is_a_clear_error_not_a_hang():
    # the load-time check passes every static plan; a plan made during the run (online
    # HEFT) is checked when its first request starts: shrink the room to mimic one
    engine = engine_of(one_unit(POOL_B))
    engine.memory.room["phone"] = BOUND_B - 1
    with pytest.raises(Exception, match="could never start") as info:
        engine.run()
    assert "node 'phone' has 8.039 kB of its 16.48 kB pool beside its weights" in str(info.value)


def test_online_heft_on_a_pool_too_small_for_its_overlap_stops_with_the_fix():
    # online HEFT's units run their reserved ops in a fixed order: a request parked for
    # memory there blocks the ops that would free it; the run says so instead of hanging
    # (the earlier gate failed here with a KeyError). With room for two it completes.
    doc = small_soc_document()
    doc["nodes"]["phone"]["memory_gb"] = (WEIGHTS_B + 14_040) * 1e-9  # the chain's bound
    doc["workload"][0].update(count=6, arrival={"process": "periodic", "period_ms": 0.3})
    doc["placement"] = {"policy": "heft", "online": True}
    with pytest.raises(SimulationError, match="wait for memory") as info:
        simulate(build(doc))
    assert "online HEFT plans ignore memory" in str(info.value)
    assert "memory_policy: allow" in str(info.value)
    doc["nodes"]["phone"]["memory_gb"] = (WEIGHTS_B + 2 * 14_040) * 1e-9
    result = simulate(build(doc))
    assert (result.requests["status"] == "completed").all()
