"""The host's cache sizes from sysfs, and the device writer's ``caches:`` block."""

from __future__ import annotations

from calibration.device import (
    NODE,
    UNIT,
    cache_comment,
    device_yaml,
    host_cache_sizes,
    load_platform,
)
from calibration.fit import FitResult, HostRates
from calibration.table import Provenance


def fake_sysfs(root, entries):
    for i, (level, kind, size) in enumerate(entries):
        index = root / f"index{i}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")
    return root


def test_sizes_of_data_and_unified_levels_innermost_first(tmp_path):
    root = fake_sysfs(
        tmp_path,
        [
            (1, "Data", "32K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "512K"),
            (3, "Unified", "32768K"),
        ],
    )
    sizes = host_cache_sizes(root)
    assert sizes == (("l1d", 32_768), ("l2", 524_288), ("l3", 33_554_432))
    assert cache_comment(sizes) == "l1d 32 KiB, l2 512 KiB, l3 32768 KiB"
    assert host_cache_sizes(tmp_path / "absent") == ()


def test_written_levels_load_as_the_unit_hierarchy(tmp_path):
    rates = HostRates({"fp32": 100e9}, 20e9)
    result = FitResult({"default": 0.5}, 20e9, 2e-6, 1e-6, rates)
    prov = Provenance("2026-12-03", "test host", "onnxruntime 1.0", 1)
    levels = (("l1d", 32_768, 200e9), ("l2", 524_288, 100e9), ("l3", 33_554_432, 50e9))
    path = tmp_path / "host.yaml"
    path.write_text(device_yaml(result, prov, {}, caches=levels))
    unit = load_platform(path).unit(f"{NODE}.{UNIT}")
    assert [(c.name, c.size_bytes, c.bandwidth_bytes_per_s) for c in unit.caches] == list(levels)
    path.write_text(device_yaml(result, prov, {}))
    assert load_platform(path).unit(f"{NODE}.{UNIT}").caches == ()
