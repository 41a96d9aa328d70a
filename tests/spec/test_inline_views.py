"""Inline ops may declare ``view: true``: a reshape that aliases its input, which costs
dispatch only (docs/cost-model.md, "Views cost dispatch only"); a bad value or a view
that computes something is an error at its YAML path."""

from __future__ import annotations

import pytest

from simulator.hardware.cost import op_time_s

EXACT = 1e-12

# conv 1 MB out (fp32: 250,000 elements) -> view -> fc
OPS = """\
  net:
    ops:
      - {name: conv, kind: conv, macs: 1000000, input_elems: 3072, output_elems: 250000}
      - {name: flat, kind: reshape, input_elems: 250000, output_elems: 250000, view: VIEW}
      - {name: fc, kind: fc, macs: 2500000, input_elems: 250000, output_elems: 10}
    edges: [{src: conv, dst: flat}, {src: flat, dst: fc}]
"""


def with_ops(spec, ops: str) -> str:
    """BASE with the inline model and a 12 us dispatch on the phone's gpu."""
    text = spec.edit(
        spec.BASE, "        memory_mb: 2000\n", "        memory_mb: 2000\n        dispatch_us: 12\n"
    )
    return spec.edit(text, "  net: {zoo: alexnet}\n", ops)


def test_view_true_makes_the_op_a_view_that_costs_dispatch_only(spec):
    scenario = spec.load(with_ops(spec, OPS.replace("VIEW", "true")))
    net = scenario.models["net"]
    assert net.op("flat").is_view and net.op("flat").attrs["view"] == 1
    assert not net.op("conv").is_view
    gpu = scenario.platform.unit("phone.gpu")
    # the phone's gpu: one core (no barrier), 12 us dispatch: its whole time (the 2 MB the
    # reshape spans would take 2e6 / 20 GB/s = 100 us more as a copy)
    assert gpu.op_cores == 1
    assert op_time_s(net.op("flat"), gpu) == pytest.approx(12e-6, rel=EXACT)


def test_the_default_is_not_a_view_and_pays_its_bytes(spec):
    net = spec.load(with_ops(spec, OPS.replace(", view: VIEW", ""))).models["net"]
    scenario = spec.load(with_ops(spec, OPS.replace("VIEW", "false")))
    assert not net.op("flat").is_view and not scenario.models["net"].op("flat").is_view
    gpu = scenario.platform.unit("phone.gpu")
    # 12 us dispatch + 2 MB / 20 GB/s = 112 us
    assert op_time_s(net.op("flat"), gpu) == pytest.approx(112e-6, rel=EXACT)


def test_a_non_boolean_view_is_an_error_naming_path_and_type(spec):
    p = spec.problem(with_ops(spec, OPS.replace("VIEW", "yes please")))
    assert p.path == "models.net.ops[1].view"
    assert "true or false" in p.message
    assert str(p.file).endswith("scenario.yaml")
    assert "scenario.yaml" in str(p) and "models.net.ops[1].view" in str(p)


@pytest.mark.parametrize(
    ("op", "key", "expected"),
    [
        (
            "{name: flat, kind: conv, macs: 1, input_elems: 250000, output_elems: 250000,"
            " view: true}",
            "view",
            "only a reshape op can be a view (this op is a conv)",
        ),
        (
            "{name: flat, kind: reshape, flops: 5, input_elems: 250000, output_elems: 250000,"
            " view: true}",
            "flops",
            "a view computes nothing and costs dispatch only: it cannot have flops",
        ),
        (
            "{name: flat, kind: reshape, params: 7, input_elems: 250000, output_elems: 250000,"
            " view: true}",
            "params",
            "it cannot have params",
        ),
        (
            "{name: flat, kind: reshape, time_ms: {cpu: 1}, view: true}",
            "time_ms",
            "it cannot have time_ms",
        ),
    ],
)
def test_a_view_that_computes_is_refused_at_its_key(spec, op, key, expected):
    line = (
        "      - {name: flat, kind: reshape, input_elems: 250000, output_elems: 250000, view: VIEW}"
    )
    p = spec.problem(with_ops(spec, OPS.replace(line, f"      - {op}")))
    assert p.path == f"models.net.ops[1].{key}"
    assert expected in p.message
