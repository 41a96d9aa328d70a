"""``models.<name>.techniques``, ``accuracy_top1`` and the ``score:`` section in YAML."""

from __future__ import annotations

import pytest

from simulator.errors import ScenarioError
from simulator.score import score_section

FUZE = "techniques: [{name: fuze}]"
DTYP = "techniques: [{name: quantize, dtyp: int8}]"


def test_techniques_apply_to_zoo_and_inline_models(spec):
    text = spec.edit(
        spec.BASE,
        "  net: {zoo: alexnet}",
        "  net: {zoo: alexnet, techniques: [{name: quantize, dtype: fp16}, {name: fuse}]}\n"
        "  tiny:\n"
        "    ops: [{name: a, kind: conv, flops: 10, params: 4, output_elems: 2}]\n"
        "    techniques: [{name: quantize, dtype: int8}]\n"
        "    accuracy_top1: 50\n"
        "  tiny2:\n"
        "    ops: [{name: a, kind: conv, flops: 10, params: 4, output_elems: 2}]\n"
        "    techniques: [{name: quantize, dtype: int8, accuracy_delta: -1.5}]\n"
        "    accuracy_top1: 50",
    )
    scenario = spec.load(text)
    net = scenario.models["net"]
    assert {op.dtype for op in net} == {"fp16"}
    assert net.op("conv1").fused == ("conv1", "relu1")
    assert scenario.accuracy_top1["net"] == 56.522  # fp16 and fusion: 0 pp
    assert scenario.models["tiny"].op("a").weight_bytes == 4
    assert scenario.accuracy_top1["tiny"] is None  # int8 on no known family: unknown
    assert scenario.accuracy_top1["tiny2"] == 48.5


def test_unknown_technique_names_the_nearest_with_its_path(spec):
    text = spec.edit(
        spec.BASE, "  net: {zoo: alexnet}", "  net: {zoo: alexnet, techniques: [{name: fuze}]}"
    )
    p = spec.problem(text)
    assert p.path == "models.net.techniques[0].name"
    assert p.suggestion == "fuse"
    assert "unknown technique 'fuze'" in p.message


def test_prune_ratio_of_one_is_rejected_at_its_path(spec):
    text = spec.edit(
        spec.BASE,
        "  net: {zoo: alexnet}",
        "  net: {zoo: alexnet, techniques: [{name: fuse}, {name: prune_channels, ratio: 1}]}",
    )
    p = spec.problem(text)
    assert p.path == "models.net.techniques[1]"
    assert "ratio must be in [0, 1), got 1" in p.message


def test_unknown_technique_option_is_reported(spec):
    text = spec.edit(
        spec.BASE,
        "  net: {zoo: alexnet}",
        "  net: {zoo: alexnet, techniques: [{name: quantize, dtyp: int8}]}",
    )
    p = spec.problem(text)
    assert p.path == "models.net.techniques[0].dtyp"
    assert p.suggestion == "dtype"


def test_unit_technique_fields(spec):
    text = spec.edit(
        spec.BASE,
        "memory_mb: 2000",
        "memory_mb: 2000\n        fused_kernels: false\n        sparse_efficiency: 0.4",
    )
    gpu = spec.load(text).platform.unit("phone.gpu")
    assert gpu.fused_kernels is False and gpu.sparse_efficiency == 0.4
    bad = spec.edit(spec.BASE, "memory_mb: 2000", "memory_mb: 2000\n        sparse_efficiency: 2")
    assert spec.problem(bad).path == "nodes.phone.units.gpu.sparse_efficiency"


SCORE = """
score:
  combinations:
    base: {}
    int8: {techniques: [{name: quantize, dtype: int8}]}
  placements:
    cpu: {policy: single, unit: cpu}
"""


def test_score_section_is_read(spec):
    section = score_section(spec.load(spec.BASE + SCORE))
    assert list(section["combinations"]) == ["base", "int8"]
    assert section["combinations"]["int8"].techniques[0]["dtype"] == "int8"
    assert section["placements"]["cpu"].policy == "single"


def test_score_section_errors_name_their_path(spec):
    text = spec.BASE + SCORE.replace("quantize", "quantise")
    p = spec.problem(text)
    assert p.path == "score.combinations.int8.techniques[0].name"
    assert p.suggestion == "quantize"
    with pytest.raises(ScenarioError, match="no 'score:' section"):
        score_section(spec.load(spec.BASE))
