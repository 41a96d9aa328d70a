"""Inline models: ops and edges written in the scenario, with explicit time tables."""

from __future__ import annotations

import pytest

from simulator.platform import CostOracle

INLINE = """\
  net:
    ops:
      - {name: a, kind: conv, macs: 1000, output_elems: 1000, time_ms: {phone.cpu: 2, gpu: 1.5}}
      - {name: b, kind: fc, flops: 5000, output_elems: 10, dtype: fp16, time_ms: {cpu: 4, gpu: 0.5}}
      - {name: c, kind: softmax, output_elems: 10, time_ms: {cpu: 0.25, phone.gpu: 0.125}}
    edges:
      - {src: a, dst: b}
      - {src: b, dst: c, bytes: 123, comm_ms: 3}
"""


@pytest.fixture
def inline_text(spec):
    return spec.edit(spec.BASE, "  net: {zoo: alexnet}\n", INLINE)


def test_inline_model_ops(spec, inline_text):
    model = spec.load(inline_text).models["net"]
    assert model.order == ("a", "b", "c")
    a, b, c = (model.op(n) for n in "abc")
    assert (a.kind, a.macs, a.flops) == ("conv", 1000.0, 2000.0)  # flops default 2 x macs
    assert (b.flops, b.macs, b.dtype) == (5000.0, 0.0, "fp16")
    assert c.flops == 0.0
    assert a.parallel_fraction == 1.0
    assert dict(a.time_s) == {"phone.cpu": 0.002, "gpu": 0.0015}
    assert dict(b.time_s) == {"cpu": 0.004, "gpu": 0.0005}
    assert dict(c.time_s) == {"cpu": 0.00025, "phone.gpu": 0.000125}


def test_inline_model_edges(spec, inline_text):
    model = spec.load(inline_text).models["net"]
    ab, bc = model.edge("a", "b"), model.edge("b", "c")
    assert ab.bytes == 1000 * 4  # producer a: 1000 fp32 elements
    assert ab.comm_s is None
    assert (bc.bytes, bc.comm_s) == (123, 0.003)


def test_edge_bytes_default_follows_the_producer_dtype(spec, inline_text):
    text = spec.edit(
        inline_text, "- {src: b, dst: c, bytes: 123, comm_ms: 3}", "- {src: b, dst: c}"
    )
    assert spec.load(text).models["net"].edge("b", "c").bytes == 10 * 2  # fp16


def test_time_tables_drive_the_oracle(spec, inline_text):
    s = spec.load(inline_text)
    oracle = CostOracle(s.platform)
    model = s.models["net"]
    assert oracle.op_time_s(model.op("a"), "phone.cpu") == 0.002
    assert oracle.op_time_s(model.op("a"), "phone.gpu") == 0.0015
    assert oracle.op_time_s(model.op("a"), "cloud.gpu") == 0.0015  # bare 'gpu'
    assert oracle.op_time_s(model.op("c"), "phone.gpu") == 0.000125
    assert not oracle.supports(model.op("c"), "cloud.gpu")
    transfer = oracle.edge_transfer(model.edge("b", "c"), "phone.cpu", "cloud.gpu")
    assert (transfer.kind, transfer.time_s(123)) == ("explicit", 0.003)


def test_time_table_names_unknown_unit(spec, inline_text):
    text = spec.edit(inline_text, "{phone.cpu: 2, gpu: 1.5}", "{phone.cpu: 2, gpuu: 1.5}")
    p = spec.problem(text)
    assert p.path == "models.net.ops[0].time_ms.gpuu"
    assert p.message.startswith("time table names unknown unit 'gpuu'; units: phone.cpu")
    assert p.suggestion == "gpu"
    assert p.line == spec.line_of(text, "gpuu")


def test_time_table_names_unit_on_unknown_node(spec, inline_text):
    text = spec.edit(inline_text, "{phone.cpu: 2, gpu: 1.5}", "{phone.cpu: 2, phnoe.gpu: 1.5}")
    p = spec.problem(text)
    assert p.path == "models.net.ops[0].time_ms.phnoe.gpu"
    assert p.suggestion == "phone.gpu"


def test_time_table_must_not_be_empty(spec, inline_text):
    p = spec.problem(
        spec.edit(inline_text, "time_ms: {cpu: 0.25, phone.gpu: 0.125}", "time_ms: {}")
    )
    assert p.path == "models.net.ops[2].time_ms"


def test_negative_time(spec, inline_text):
    p = spec.problem(spec.edit(inline_text, "gpu: 0.5", "gpu: -0.5"))
    assert p.path == "models.net.ops[1].time_ms.gpu"
    assert p.message == "expected a number >= 0 (ms), got -0.5"


def test_dangling_edge_suggests(spec, inline_text):
    text = spec.edit(inline_text, "{src: a, dst: b}", "{src: a, dst: bb}")
    p = spec.problem(text)
    assert p.path == "models.net.edges[0].dst"
    assert p.message == "unknown op 'bb'; ops: a, b, c"
    assert p.suggestion == "b"
    assert p.line == spec.line_of(text, "dst: bb")


def test_cycle_names_the_cycle(spec, inline_text):
    text = spec.edit(
        inline_text,
        "      - {src: a, dst: b}\n",
        "      - {src: a, dst: b}\n      - {src: c, dst: a}\n",
    )
    p = spec.problem(text)
    assert p.path == "models.net.edges"
    assert p.message.startswith("the model graph has a cycle: ")
    cycle = p.message.split(": ", 1)[1].split(" -> ")
    assert cycle[0] == cycle[-1]
    assert sorted(cycle[:-1]) == ["a", "b", "c"]
    assert p.line == spec.line_of(text, "edges:")


def test_self_loop_is_a_cycle(spec, inline_text):
    p = spec.problem(spec.edit(inline_text, "{src: a, dst: b}", "{src: b, dst: b}"))
    assert p.message == "the model graph has a cycle: b -> b"


def test_duplicate_op_and_edge(spec, inline_text):
    text = spec.edit(inline_text, "{name: c,", "{name: b,")
    found = spec.problems(text)
    assert (found[0].path, found[0].message) == ("models.net.ops[2].name", "duplicate op name 'b'")
    assert found[0].line == spec.line_of(text, "{name: b, kind: softmax")
    text = spec.edit(
        inline_text, "- {src: b, dst: c, bytes: 123, comm_ms: 3}", "- {src: a, dst: b}"
    )
    p = spec.problem(text)
    assert p.path == "models.net.edges[1]"
    assert p.message == "duplicate edge a -> b"


def test_flops_below_twice_macs(spec, inline_text):
    p = spec.problem(spec.edit(inline_text, "flops: 5000,", "flops: 5000, macs: 4000,"))
    assert p.path == "models.net.ops[1]"
    assert "flops (5000.0) < 2 x macs (4000.0)" in p.message


def test_ops_must_not_be_empty(spec):
    p = spec.problem(spec.edit(spec.BASE, "  net: {zoo: alexnet}\n", "  net: {ops: []}\n"))
    assert p.path == "models.net.ops"
    assert p.message == "expected at least 1 item(s), got 0"


def test_problems_of_two_models_are_all_reported(spec, inline_text):
    # One model's dangling edge must not hide the other model's cycle.
    other = (
        "  loop:\n    ops: [{name: x, time_ms: {cpu: 1}}, {name: y, time_ms: {cpu: 1}}]\n"
        "    edges: [{src: x, dst: y}, {src: y, dst: x}]\n"
    )
    text = spec.edit(inline_text, "{src: a, dst: b}", "{src: a, dst: bb}")
    text = spec.edit(text, "workload:\n", other + "workload:\n")
    found = {p.path: p.message for p in spec.problems(text)}
    assert set(found) == {"models.net.edges[0].dst", "models.loop.edges"}
    assert "cycle" in found["models.loop.edges"]


def test_zoo_model_and_inline_model_side_by_side(spec, inline_text):
    text = spec.edit(inline_text, "workload:\n", "  big: {zoo: resnet18, dtype: int8}\nworkload:\n")
    s = spec.load(text)
    assert set(s.models) == {"net", "big"}
    assert all(op.dtype == "int8" for op in s.models["big"])
