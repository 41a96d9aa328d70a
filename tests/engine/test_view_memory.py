"""A view's output is its input's buffer: it adds no activation bytes, and the buffer
stays live until the view's readers are done (simulator.placement.plan.buffer_owners).

The model (on ``small_soc_document``'s phone: a 1 GFLOP/s cpu, a 4 GFLOP/s gpu, 100 us
sync + bytes / 1 GB/s between them): conv A (1 MFLOP: 1 ms on the cpu) reads the
2,000 B input and writes 1 MB (250,000 fp32); reshape view V (0 s: no dispatch); conv B
(1 MFLOP) writes 0.5 MB.
"""

from __future__ import annotations

from unittest.mock import patch

import pytest
from conftest import build, small_soc_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import scenarios

import simulator.placement.plan as plan_module
from simulator.engine import plan_replicas, simulate
from simulator.placement.memory_pool import activation_bound

MS = 1e-3
MB = 1_000_000
INPUT_B = 2000


def view_chain(b_unit: str = "cpu", view: bool = True) -> dict:
    doc = small_soc_document()
    doc["memory_series"] = True
    reshape = {"name": "V", "kind": "reshape", "input_elems": 250_000, "output_elems": 250_000}
    if view:
        reshape["view"] = True
    doc["models"]["chain"] = {
        "ops": [
            {
                "name": "A",
                "kind": "conv",
                "flops": 1e6,
                "input_elems": 500,
                "output_elems": 250_000,
            },
            reshape,
            {"name": "B", "kind": "conv", "flops": 1e6, "output_elems": 125_000},
        ],
        "edges": [{"src": "A", "dst": "V"}, {"src": "V", "dst": "B"}],
    }
    doc["placement"] = {
        "policy": "manual",
        "rules": [{"ops": "B", "unit": b_unit}],
        "default": "cpu",
    }
    return doc


def unit_bytes(memory, unit: str, t: float) -> int:
    """Bytes in use on ``unit`` just after ``t`` (the last row at or before it)."""
    rows = memory[(memory["unit"] == unit) & (memory["time_s"] <= t + 1e-12)]
    return int(rows.iloc[-1]["unit_bytes"])


def test_a_view_counts_its_input_once_and_keeps_it_live_until_its_reader_ends():
    result = simulate(build(view_chain()))
    peak = result.units.set_index("unit").loc["phone.cpu", "peak_memory_bytes"]
    # A 1 ms (0 .. 1 ms), V at 1 ms, B 1 ms (1 .. 2 ms); while B runs: A's 1 MB (read
    # through V) + B's 0.5 MB; A's 1 MB is counted once (not 2 MB), and live until B ends
    # (else 1 MB + 2,000 B at t = 0 would be the peak)
    assert peak == MB + MB // 2
    assert unit_bytes(result.memory, "phone.cpu", 1.5 * MS) == MB + MB // 2
    # B ended at 2 ms: A's buffer goes; B's 0.5 MB output is on its way back
    assert unit_bytes(result.memory, "phone.cpu", 2 * MS) <= MB // 2


def test_the_same_reshape_without_view_copies_its_input():
    result = simulate(build(view_chain(view=False)))
    # at 1 ms A's 1 MB and V's 1 MB copy; the reshape without view pays 2 MB / unbounded
    # bandwidth = 0 s, so B then runs 1 .. 2 ms beside V's copy
    assert result.units.set_index("unit").loc["phone.cpu", "peak_memory_bytes"] == 2 * MB


def test_a_view_copied_to_another_unit_holds_its_input_until_the_copy_has_left():
    result = simulate(build(view_chain(b_unit="gpu")))
    units = result.units.set_index("unit")
    # the cpu: the input 2,000 B + A's 1 MB at t = 0; V adds nothing
    assert units.loc["phone.cpu", "peak_memory_bytes"] == INPUT_B + MB
    # V's 1 MB (A's buffer) moves to the gpu: 100 us + 1 MB / 1 GB/s = 1.1 ms, from 1 ms
    # to 2.1 ms; A's buffer is held on the cpu until then
    assert unit_bytes(result.memory, "phone.cpu", 2.05 * MS) == MB
    assert unit_bytes(result.memory, "phone.cpu", 2.1 * MS) == 0
    # the gpu: the 1 MB copy + B's 0.5 MB while B runs (2.1 .. 2.35 ms)
    assert units.loc["phone.gpu", "peak_memory_bytes"] == MB + MB // 2


def plan_of(b_unit: str):
    return plan_replicas(build(view_chain(b_unit=b_unit)))["app"][0]


@pytest.mark.parametrize(("b_unit", "moved_b"), [("cpu", 0), ("gpu", MB)])
def test_the_memory_pool_bound_counts_a_view_once(b_unit, moved_b):
    scenario = build(view_chain(b_unit=b_unit))
    plan = plan_replicas(scenario)["app"][0]
    # outputs A 1 MB + V 0 + B 0.5 MB, the request input moved in (2,000 B), and on the
    # gpu V's 1 MB copy (was A's 1 MB + V's 1 MB + ...)
    bound = MB + MB // 2 + INPUT_B + moved_b
    assert activation_bound(plan, scenario.platform) == {"phone": bound}


def test_a_views_readers_hold_its_inputs_buffer():
    plan = plan_of("cpu")  # A, V, B: indices 0, 1, 2
    assert plan.output_bytes == (MB, 0, MB // 2)
    assert plan.local_inputs == ((), (0,), (0,))  # B reads A's buffer through V
    assert plan.holders == (2, 0, 1)  # A: V and B; B: its output's way back
    plan = plan_of("gpu")
    (move,) = plan.moves_out[1]
    assert (move.src_op, move.buffer_op, move.holder, move.nbytes) == (1, 0, 0, MB)
    assert plan.holders == (2, 0, 1)  # A: V and V's copy to the gpu


def test_a_view_on_another_unit_than_its_input_owns_its_output():
    doc = view_chain()
    doc["placement"] = {
        "policy": "manual",
        "rules": [{"ops": "V", "unit": "gpu"}],
        "default": "cpu",
    }
    plan = plan_replicas(build(doc))["app"][0]
    # V reads a copy moved in (an InBuf, not an op's buffer): it keeps its own 1 MB
    assert plan.output_bytes == (MB, MB, MB // 2)
    assert all(m.buffer_op is None for ms in plan.moves_out for m in ms)


@st.composite
def with_views(draw) -> dict:
    """A random scenario (tests/strategies.py) whose ops with one input may be views of
    it: kind reshape, no FLOPs or weights, as many elements as their input."""
    doc = draw(scenarios(max_ops=6))
    doc["memory_series"] = True
    for node in doc["nodes"].values():
        node.pop("battery_wh", None)  # a flat battery cuts requests short, holding buffers
    ops = {op["name"]: op for op in doc["models"]["m"]["ops"]}
    preds: dict[str, list[str]] = {}
    for edge in doc["models"]["m"]["edges"]:
        preds.setdefault(edge["dst"], []).append(edge["src"])
    for name, op in ops.items():  # in order: a view's input has its final size already
        if len(preds.get(name, [])) == 1 and draw(st.booleans()):
            elems = ops[preds[name][0]]["output_elems"]
            op.update(kind="reshape", flops=0.0, params=0, view=True)
            op.update(input_elems=elems, output_elems=elems)
    return doc


def final_and_peak(doc: dict) -> tuple[dict, dict]:
    result = simulate(build(doc))
    memory = result.memory
    last = memory.groupby("unit").tail(1).set_index("unit")
    final = (last["unit_bytes"] - last["weights_bytes"]).to_dict()
    peak = result.units.set_index("unit")["peak_memory_bytes"].to_dict()
    return final, peak


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(with_views())
def test_aliasing_never_adds_memory_and_frees_every_buffer(doc):
    final, peak = final_and_peak(doc)
    assert all(v == 0 for v in final.values()), final  # every buffer freed, none twice
    with patch.object(
        plan_module, "buffer_owners", lambda graph, order, units: list(range(len(order)))
    ):
        old_final, old_peak = final_and_peak(doc)  # each view owning a copy: the old rule
    assert all(v == 0 for v in old_final.values())
    # the same schedule (memory does not change times without pools); a view's buffer is
    # its input's size, so at every instant aliasing holds no more than copying
    for uid, nbytes in peak.items():
        assert nbytes <= old_peak[uid], uid
