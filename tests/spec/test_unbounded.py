"""``unbounded``: the one spelling of a figure with no bound, on purpose (a unit's memory
bandwidth and capacity, a node's copy and DRAM bandwidth and memory pool). It checks to
``math.inf`` (what the absent key already meant), a near miss is refused naming it, the
editor schema offers it, and an op on a unit of unbounded memory bandwidth takes exactly
its compute time."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.cli import main
from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.graph.model import Op
from simulator.hardware.cost import compute_time_s, op_time_s
from simulator.hardware.units import ComputeUnit
from simulator.schema import UNBOUNDED, Context, Loc, Number
from simulator.spec import parse_scenario
from simulator.spec.editor_schema import scenario_json_schema

#: 1 MFLOP at 10 GFLOP/s x 0.5 = 0.2 ms of compute; its 4 MB of fp32 weights would take
#: 4 ms at 1 GB/s
UNIT = {
    "kind": "cpu",
    "peak_gflops": {"fp32": 10},
    "efficiency": {"default": 0.5},
    "idle_w": 0,
    "active_w": 1,
}


def document(unit: dict | None = None, node: dict | None = None) -> dict:
    return {
        "name": "unbounded",
        "nodes": {
            "phone": {
                **(node or {}),
                "units": {
                    "cpu": {**UNIT, "memory_bandwidth_gb_s": UNBOUNDED, **(unit or {})},
                    "gpu": {**UNIT, "kind": "gpu", "memory_bandwidth_gb_s": 2},
                },
            }
        },
        "models": {
            "net": {"ops": [{"name": "a", "kind": "fc", "flops": 1e6, "params": 1_000_000}]}
        },
        "workload": [
            {
                "app": "a",
                "model": "net",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
        "placement": {"policy": "single", "unit": "cpu"},
    }


def problems(doc: dict) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    return [str(p) for p in caught.value.problems]


def test_every_unbounded_field_checks_to_inf():
    node = {
        "shared_memory_bandwidth_gb_s": UNBOUNDED,
        "dram_bandwidth_gb_s": UNBOUNDED,
        "memory_gb": UNBOUNDED,
    }
    scenario = parse_scenario(document({"memory_mb": UNBOUNDED}, node))
    phone = scenario.platform.nodes["phone"]
    cpu = scenario.platform.unit("phone.cpu")
    assert cpu.memory_bandwidth_bytes_per_s == math.inf
    assert cpu.memory_bytes == math.inf
    assert phone.shared_memory_bandwidth_bytes_per_s == math.inf
    assert phone.dram_bandwidth_bytes_per_s == math.inf
    assert phone.dram_bps == math.inf  # declared: not the largest unit's 2 GB/s
    assert phone.memory_bytes == math.inf
    # the document keeps the word: written back, it loads to the same figures
    assert scenario.document["nodes"]["phone"]["units"]["cpu"]["memory_bandwidth_gb_s"] == (
        UNBOUNDED
    )


def test_unbounded_is_the_same_as_leaving_the_key_out():
    absent = document()
    del absent["nodes"]["phone"]["units"]["cpu"]["memory_bandwidth_gb_s"]
    ops = [simulate(parse_scenario(doc)).ops for doc in (document(), absent)]
    assert ops[0].equals(ops[1])


@pytest.mark.parametrize(
    "written",
    ["infinite", "inf", "Infinity", "unlimited", "Unbounded", "unbound", "no limit", math.inf],
)
def test_a_near_miss_is_refused_naming_unbounded(written):
    (message,) = problems(document({"memory_bandwidth_gb_s": written}))
    assert message.startswith(
        "<scenario>: nodes.phone.units.cpu.memory_bandwidth_gb_s: expected a number > 0 "
        "(GB/s) or 'unbounded', got "
    )
    assert message.endswith("(did you mean 'unbounded'?)")


def test_yaml_inf_is_refused_with_the_spelling():
    text = yaml.safe_dump(document()).replace(
        "memory_bandwidth_gb_s: unbounded", "memory_bandwidth_gb_s: .inf"
    )
    (message,) = problems(yaml.safe_load(text))
    assert message == (
        "<scenario>: nodes.phone.units.cpu.memory_bandwidth_gb_s: expected a number > 0 "
        "(GB/s) or 'unbounded', got inf; write 'unbounded' for no bound (did you mean "
        "'unbounded'?)"
    )


@pytest.mark.parametrize("written", ["10 GB/s", "fast", -math.inf])
def test_other_mistakes_are_not_told_to_be_unbounded(written):
    (message,) = problems(document({"memory_bandwidth_gb_s": written}))
    assert "did you mean" not in message and "expected a number > 0 (GB/s) or" in message


def test_a_field_without_a_meaningful_infinity_refuses_it():
    (message,) = problems(document({"dispatch_us": UNBOUNDED}))
    assert message == (
        "<scenario>: nodes.phone.units.cpu.dispatch_us: expected a number >= 0 (µs), got "
        "text 'unbounded'"
    )


@pytest.mark.parametrize(
    ("dist", "key"),
    [({"mean": UNBOUNDED, "sd": 1}, "mean"), ({"low": 1, "high": UNBOUNDED}, "high")],
)
def test_a_distribution_of_an_unbounded_field_stays_finite(dist, key):
    (message,) = problems(document({"memory_bandwidth_gb_s": dist}))
    assert message == (
        f"<scenario>: nodes.phone.units.cpu.memory_bandwidth_gb_s.{key}: expected a number > "
        "0 (GB/s), got text 'unbounded'"
    )


def test_the_number_schema_alone():
    schema = Number("GB/s", 1e9, gt=0, unbounded=True)
    ctx = Context()
    assert schema.check(UNBOUNDED, Loc("x"), ctx) == math.inf
    assert schema.check(2.5, Loc("x"), ctx) == 2.5e9
    assert ctx.problems == []
    assert Number("GB/s", 1e9, gt=0).describe() == "a number > 0 (GB/s)"
    assert schema.describe() == "a number > 0 (GB/s) or 'unbounded'"


def test_the_editor_schema_offers_it():
    schema = scenario_json_schema()
    node = schema["properties"]["nodes"]["additionalProperties"]
    unit = node["properties"]["units"]["additionalProperties"]
    for field in (
        unit["properties"]["memory_bandwidth_gb_s"],
        unit["properties"]["memory_mb"],
        node["properties"]["shared_memory_bandwidth_gb_s"],
        node["properties"]["dram_bandwidth_gb_s"],
        node["properties"]["memory_gb"],
    ):
        assert {"const": UNBOUNDED, "description": "no bound, on purpose"} in field["anyOf"]
    assert unit["properties"]["memory_bandwidth_gb_s"]["default"] == UNBOUNDED
    assert "default" not in node["properties"]["dram_bandwidth_gb_s"]  # the largest unit's
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(document())) == []
    wrong = document({"memory_bandwidth_gb_s": "infinite"})
    assert [list(e.absolute_path) for e in validator.iter_errors(wrong)] == [
        ["nodes", "phone", "units", "cpu", "memory_bandwidth_gb_s"]
    ]
    no_mean = document({"memory_bandwidth_gb_s": {"mean": UNBOUNDED, "sd": 1}})
    assert len(list(validator.iter_errors(no_mean))) == 1


def test_a_run_takes_exactly_the_compute_time_and_its_json_is_finite(tmp_path, capsys):
    """Hand-computed: 1e6 FLOP / (10e9 FLOP/s x 0.5) = 0.2 ms, though its 4 MB of weights
    would take 4 ms at 1 GB/s; no warning (the figure is stated), no inf in the JSON."""
    ops = simulate(parse_scenario(document())).ops
    assert ops["end_s"].iloc[0] - ops["start_s"].iloc[0] == 1e6 / (10e9 * 0.5)
    slow = simulate(parse_scenario(document({"memory_bandwidth_gb_s": 1}))).ops
    assert slow["end_s"].iloc[0] - slow["start_s"].iloc[0] == 4e6 / 1e9
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document(node={"shared_memory_bandwidth_gb_s": UNBOUNDED})))
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    summary = json.loads(out)["summary"]  # strict JSON: no Infinity or NaN tokens
    assert summary["latency_mean_s"] == pytest.approx(2e-4, rel=1e-12)


finite = st.floats(min_value=1e-3, max_value=1e6)


@settings(max_examples=200, deadline=None)
@given(
    flops=st.floats(min_value=0, max_value=1e12),
    params=st.integers(min_value=0, max_value=10**9),
    peak_gflops=finite,
    efficiency=st.floats(min_value=0.01, max_value=1),
    cores=st.integers(min_value=1, max_value=16),
    parallel=st.floats(min_value=0, max_value=1),
    dispatch_s=st.floats(min_value=0, max_value=1e-3),
    bandwidth_gb_s=finite,
)
def test_an_unbounded_unit_is_exactly_compute_bound(
    flops, params, peak_gflops, efficiency, cores, parallel, dispatch_s, bandwidth_gb_s
):
    """Whatever its bytes, an op on an unbounded unit takes dispatch + compute time (never
    NaN: no inf x 0), and no more than on the same unit with any finite bandwidth."""
    op = Op(name="x", kind="fc", flops=flops, params=params, parallel_fraction=parallel)
    unit = dict(
        name="u",
        kind="cpu",
        cores=cores,
        peak_flops={"fp32": peak_gflops * 1e9},
        efficiency={"default": efficiency},
        dispatch_s=dispatch_s,
    )
    unbounded = ComputeUnit(**unit, memory_bandwidth_bytes_per_s=math.inf)
    bounded = ComputeUnit(**unit, memory_bandwidth_bytes_per_s=bandwidth_gb_s * 1e9)
    time_s = op_time_s(op, unbounded)
    assert time_s == dispatch_s + compute_time_s(op, unbounded)
    assert math.isfinite(time_s) and time_s <= op_time_s(op, bounded)


def test_a_sweep_over_a_figure_and_unbounded_stores_inf(tmp_path, capsys):
    """The table's column stays numeric (inf for the word) in CSV and Parquet alike; the
    point at unbounded is the compute time, the one at 1 GB/s the 4 ms of its bytes."""
    from simulator.sweep.store import load_sweep_table

    doc = document(node={"shared_memory_bandwidth_gb_s": UNBOUNDED})
    path_key = "nodes.phone.units.cpu.memory_bandwidth_gb_s"
    doc["sweep"] = {"parameters": {path_key: [1, UNBOUNDED]}, "executor": {"name": "serial"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["sweep", str(path), "-o", str(tmp_path / "sw")]) == 0
    assert capsys.readouterr().err == ""
    for table in (
        load_sweep_table(tmp_path / "sw" / name) for name in ("sweep.csv", "sweep.parquet")
    ):
        assert table[path_key].tolist() == [1.0, math.inf]
        assert table["latency_mean_s"].tolist() == pytest.approx([4e-3, 2e-4], rel=1e-12)
    journal = (tmp_path / "sw" / "rows.jsonl").read_text()
    assert '"unbounded"' in journal and "Infinity" not in journal
