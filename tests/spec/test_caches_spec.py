"""``caches:`` of units and nodes in scenario YAML: conversion, sharing and errors."""

from __future__ import annotations

CPU = "      cpu: {kind: cpu, cores: 4, peak_gflops: {fp32: 10}, dispatch_us: 5, active_w: 2}\n"
WITH_CACHES = """\
      cpu:
        kind: cpu
        peak_gflops: {fp32: 10}
        memory_bandwidth_gb_s: 8
        caches:
          - {name: l1, size_kb: 64, bandwidth_gb_s: 100}
          - {name: l2, size_kb: 512, bandwidth_gb_s: 50}
"""
NODE_CACHES = """\
    shared_memory_bandwidth_gb_s: 2
    caches: [{name: slc, size_kb: 8192, bandwidth_gb_s: 30}]
"""


def with_caches(spec, unit=WITH_CACHES, node="    shared_memory_bandwidth_gb_s: 2\n"):
    text = spec.edit(spec.BASE, CPU, unit)
    return spec.edit(text, "    shared_memory_bandwidth_gb_s: 2\n", node)


def test_levels_load_in_si_with_the_node_shared_level_last(spec):
    platform = spec.load(with_caches(spec, node=NODE_CACHES)).platform
    cpu, gpu = platform.unit("phone.cpu"), platform.unit("phone.gpu")
    assert [(c.name, c.size_bytes, c.bandwidth_bytes_per_s, c.shared) for c in cpu.caches] == [
        ("l1", 65_536, 100e9, False),
        ("l2", 524_288, 50e9, False),
        ("slc", 8_388_608, 30e9, True),
    ]
    assert [c.name for c in gpu.caches] == ["slc"]
    assert platform.unit("cloud.gpu").caches == ()


def test_a_typo_in_a_level_names_the_path_and_the_nearest_key(spec):
    unit = WITH_CACHES.replace("size_kb: 512", "sise_kb: 512")
    found = spec.problems(with_caches(spec, unit=unit))
    typo = next(p for p in found if "sise_kb" in p.path or "sise_kb" in p.message)
    assert typo.path.startswith("nodes.phone.units.cpu.caches[1]")
    assert typo.suggestion == "size_kb"


def test_levels_out_of_order_are_an_error_at_the_unit(spec):
    unit = WITH_CACHES.replace("size_kb: 512", "size_kb: 32")
    problem = spec.problem(with_caches(spec, unit=unit))
    assert problem.path == "nodes.phone.units.cpu"
    assert "cache 'l2' (32 KiB) must be larger than 'l1' (64 KiB)" in problem.message


def test_a_shared_level_slower_than_dram_is_an_error_at_the_node(spec):
    node = NODE_CACHES.replace("bandwidth_gb_s: 30", "bandwidth_gb_s: 5")
    problem = spec.problem(with_caches(spec, node=node))
    assert problem.path == "nodes.phone"
    assert "must not be slower than DRAM" in problem.message and "unit 'cpu'" in problem.message


def test_caches_need_a_dram_rate(spec):
    unit = WITH_CACHES.replace("        memory_bandwidth_gb_s: 8\n", "")
    problem = spec.problem(with_caches(spec, unit=unit))
    assert "memory_bandwidth_gb_s" in problem.message


def test_a_level_needs_a_positive_finite_bandwidth(spec):
    unit = WITH_CACHES.replace("bandwidth_gb_s: 100", "bandwidth_gb_s: .inf")
    problem = spec.problem(with_caches(spec, unit=unit))
    assert problem.path == "nodes.phone.units.cpu.caches[0].bandwidth_gb_s"
    assert "finite" in problem.message
