"""Setting scenario paths and resolving points into validated scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep.conftest import write_sweep

from simulator.errors import ScenarioError
from simulator.spec.yamlio import load_yaml_file
from simulator.sweep import parse_path, prepare_sweep, set_path
from simulator.sweep.points import expanded_document


def test_paths_parse_into_keys_and_indices():
    assert parse_path("workload[0].arrival.rate_hz") == ("workload", 0, "arrival", "rate_hz")
    assert parse_path("links.up-link.latency_ms") == ("links", "up-link", "latency_ms")
    for bad in ("", "[0].a", "a..b", "a.[0]", "a[x]", "a.b."):
        with pytest.raises(ScenarioError):
            parse_path(bad)


def test_set_path_copies_along_the_path_and_leaves_the_original():
    document = {"links": {"up": {"latency_ms": 5}}, "workload": [{"count": 1}, {"count": 2}]}
    out = set_path(document, "workload[1].count", 7)
    out = set_path(out, "links.up.bandwidth_mbps", 3)  # a new last key: an override
    assert out == {
        "links": {"up": {"latency_ms": 5, "bandwidth_mbps": 3}},
        "workload": [{"count": 1}, {"count": 7}],
    }
    assert document == {
        "links": {"up": {"latency_ms": 5}},
        "workload": [{"count": 1}, {"count": 2}],
    }


@pytest.mark.parametrize(
    ("path", "text", "suggestion"),
    [
        ("links.uplnk.latency_ms", "no key 'uplnk' in links; keys there: uplink", "uplink"),
        ("workload[2].count", "workload has 2 item(s); no index [2]", None),
        ("links.uplink.latency_ms.x", "links.uplink.latency_ms is not a mapping", None),
        ("links[0].x", "links is not a list", None),
    ],
)
def test_a_path_that_does_not_exist_names_itself_and_the_nearest_key(path, text, suggestion):
    document = {"links": {"uplink": {"latency_ms": 5}}, "workload": [{"count": 1}, {"count": 2}]}
    with pytest.raises(ScenarioError) as info:
        set_path(document, path, 1, "f.yaml")
    problem = info.value.problems[0]
    assert (problem.path, problem.file, problem.suggestion) == (path, "f.yaml", suggestion)
    assert text in problem.message


def test_paths_address_preset_fields_after_expansion():
    path = Path("scenarios/sweeps/neurosurgeon_map.yaml")
    expanded = expanded_document(load_yaml_file(path), path.parent, str(path))
    # the Wi-Fi preset's radio is there, merged into the link
    assert "radio" in expanded["links"]["uplink"] and "preset" not in expanded["links"]["uplink"]
    assert "include" not in expanded and "sweep" not in expanded


def test_every_point_resolves_with_its_values_in_si_and_its_seed(tmp_path):
    path = write_sweep(
        tmp_path,
        {"parameters": {"links.uplink.latency_ms": [5, 50], "workload[0].count": [1, 3]}},
    )
    prepared = prepare_sweep(path)
    assert len(prepared.tasks) == 4
    scenario = prepared.tasks[3].resolve()  # latency 50 ms, count 3
    assert scenario.platform.network.links["uplink"].latency_s == 0.05
    assert scenario.workload[0].count == 3
    assert scenario.seed == prepared.seeds[3] and "sweep" not in scenario.document
    assert [t.values for t in prepared.tasks] == list(prepared.points)


def test_a_bad_value_fails_before_anything_runs_naming_its_path_and_point(tmp_path):
    path = write_sweep(tmp_path, {"parameters": {"links.uplink.latency_ms": [5, -1, -2]}})
    with pytest.raises(ScenarioError) as info:
        prepare_sweep(path)
    first, second = info.value.problems  # every bad point, at once
    assert first.path == second.path == "links.uplink.latency_ms" and first.file == str(path)
    lines = path.read_text().splitlines()
    assert "latency_ms: 20" in lines[first.line - 1]  # the key's line in the file
    assert first.message == (
        "sweep value links.uplink.latency_ms=-1 (point 1): expected a number >= 0 (ms), got -1"
    )
    assert second.message.startswith("sweep value links.uplink.latency_ms=-2 (point 2)")


def test_a_value_shared_by_points_is_reported_once(tmp_path):
    path = write_sweep(
        tmp_path,
        {"parameters": {"links.uplink.latency_ms": [5, "x", "x"], "workload[0].count": [1, 2]}},
    )
    with pytest.raises(ScenarioError) as info:
        prepare_sweep(path)
    (problem,) = info.value.problems  # four points carry 'x': one problem
    assert problem.message.startswith("sweep value links.uplink.latency_ms='x' (point 2): ")


def test_a_bad_path_is_one_error_with_the_nearest_key(tmp_path):
    path = write_sweep(tmp_path, {"parameters": {"links.uplnk.latency_ms": [5, 6]}})
    with pytest.raises(ScenarioError) as info:
        prepare_sweep(path)
    (problem,) = info.value.problems
    assert problem.path == "links.uplnk.latency_ms" and problem.suggestion == "uplink"


def test_a_misspelt_last_key_gets_the_schema_suggestion(tmp_path):
    path = write_sweep(tmp_path, {"parameters": {"links.uplink.latency_sm": [5]}})
    with pytest.raises(ScenarioError) as info:
        prepare_sweep(path)
    assert info.value.problems[0].suggestion == "latency_ms"


def test_nothing_to_sweep_is_an_error(tmp_path):
    path = write_sweep(tmp_path, None)
    with pytest.raises(ScenarioError, match="nothing to sweep"):
        prepare_sweep(path)
