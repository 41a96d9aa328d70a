"""Stated bounds on what a scenario may ask for (issue 16, items 6, 9, 10, 13, 16, 17):
each is refused at validation with the YAML path and the limit, before anything is built
or run (docs/security.md lists them)."""

from __future__ import annotations

import copy

import pytest

from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.limits import (
    MAX_CONCURRENCY,
    MAX_CORES,
    MAX_HORIZON_S,
    MAX_INLINE_OPS,
    MAX_OUTAGES,
    MAX_REQUESTS,
)
from simulator.spec import parse_scenario
from tests.conftest import phone_cloud_document, small_soc_document


def _problem(doc: dict, **kwargs) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc, **kwargs)
    return "\n".join(str(p) for p in info.value.problems)


def _soc(edit) -> dict:
    doc = copy.deepcopy(small_soc_document())
    edit(doc)
    return doc


def _set(*path_value):
    *path, value = path_value

    def edit(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        # item 10: one SimPy process per core slot, 8.6 GB at 1e7
        (("nodes", "phone", "units", "cpu", "cores"), 1e7, f"<= {MAX_CORES:,}"),
        # item 13: unbounded runs
        (("workload", 0, "count"), 1e12, f"<= {MAX_REQUESTS:,}"),
        (("workload", 0, "duration_s"), 1e18, f"<= {MAX_HORIZON_S:,.0f}"),
        (
            ("workload", 0, "arrival"),
            {"process": "poisson", "rate_hz": 1, "offset_ms": 1e20},
            "offset_ms",
        ),
        (
            ("workload", 0, "arrival"),
            {"process": "closed_loop", "concurrency": 1e9},
            f"<= {MAX_CONCURRENCY:,}",
        ),
        (("workload", 0, "arrival"), {"process": "periodic", "period_ms": 1e-300}, "period_ms"),
        # items 6 and integers: int64 everywhere (seed >= 2^64 crashed Parquet writing)
        (("seed",), 2**64, "within int64"),
        (("models", "chain", "ops", 0, "params"), 2**63, "<= 281,474,976,710,656"),
        (("models", "chain", "ops", 0, "output_elems"), 10**19, "<= 281,474,976,710,656"),
        (("workload", 0, "priority"), 2**63, "within int64"),
        # item 17: finite as written, inf after conversion
        (("nodes", "phone", "shared_memory_bandwidth_gb_s"), 1e308, "inf in SI units"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_values_beyond_a_bound_are_refused(path, value, expected):
    message = _problem(_soc(_set(*path, value)))
    assert expected in message
    assert ".".join(str(p) for p in path[:2]) in message.replace("[", ".").replace("]", "")


@pytest.mark.parametrize(
    ("key", "value"), [("resistance_k_per_w", 1e-200), ("capacitance_j_per_k", 1e-200)]
)
def test_thermal_r_or_c_near_zero_is_refused(key, value):
    """R or C at 1e-200: R x C underflowed to 0 and the run died of ZeroDivisionError."""
    doc = _soc(_set("nodes", "phone", "thermal", {key: value}))
    assert f"nodes.phone.thermal.{key}: expected a number >=" in _problem(doc)


def test_a_hold_below_the_minimum_is_refused():
    doc = copy.deepcopy(phone_cloud_document())
    link = next(iter(doc["links"].values()))
    link["bandwidth_distribution"] = {
        "dist": "lognormal",
        "mean_mbps": 10,
        "cv": 0.2,
        "hold_ms": 1e-9,
    }
    assert "hold_ms: expected a number >= 0.1" in _problem(doc)


def test_the_requests_of_all_apps_are_bounded():
    """50 kHz for 30 s is 1.5 million requests: refused before running."""
    doc = _soc(_set("workload", 0, "arrival", {"process": "periodic", "rate_hz": 50_000}))
    del doc["workload"][0]["count"]
    doc["workload"][0]["duration_s"] = 30
    assert "MAX_REQUESTS" in _problem(doc)
    doc["workload"][0]["duration_s"] = 10  # 500,001 requests: allowed
    parse_scenario(doc)


def test_too_many_outages_or_inline_ops_are_refused_by_count():
    doc = copy.deepcopy(phone_cloud_document())
    next(iter(doc["links"].values()))["outages_s"] = [[0, 1]] * (MAX_OUTAGES + 1)
    assert f"at most {MAX_OUTAGES:,} item(s)" in _problem(doc)
    doc = _soc(lambda d: d["models"]["chain"].update(ops=[{"name": "a"}] * (MAX_INLINE_OPS + 1)))
    assert f"models.chain.ops: expected at most {MAX_INLINE_OPS:,} item(s)" in _problem(doc)


def test_an_op_beyond_the_horizon_stops_the_run():
    """1e300 FLOPs take 1e291 s: the run stops at the horizon bound instead of DVFS or
    hold events running for ever."""
    from simulator.errors import SimulationError

    doc = _soc(_set("models", "chain", "ops", 0, "flops", 1e300))
    with pytest.raises(SimulationError, match="MAX_HORIZON_S"):
        simulate(parse_scenario(doc))


# -- trace files -------------------------------------------------------------------------
def _trace_doc(tmp_path, text: str) -> dict:
    (tmp_path / "bw.csv").write_text(text)
    doc = copy.deepcopy(phone_cloud_document())
    next(iter(doc["links"].values()))["bandwidth_trace_file"] = "bw.csv"
    return doc


def test_a_trace_with_an_extra_column_names_it(tmp_path):
    doc = _trace_doc(tmp_path, "time_s,bandwidth_mbps,rssi\n0,10,-70\n1,5,-80\n")
    assert "unexpected column 'rssi'" in _problem(doc, base_dir=tmp_path)
    doc = _trace_doc(tmp_path, "0,10,-70\n")
    assert "unexpected third column '-70'" in _problem(doc, base_dir=tmp_path)


def test_a_trace_with_too_many_rows_is_refused(tmp_path, monkeypatch):
    import simulator.spec.csvfile as csvfile

    monkeypatch.setattr(csvfile, "MAX_TRACE_ROWS", 3)  # where trace files are read
    doc = _trace_doc(tmp_path, "".join(f"{t},10\n" for t in range(4)))
    assert "more than 3 rows (MAX_TRACE_ROWS)" in _problem(doc, base_dir=tmp_path)


def test_a_trace_time_beyond_the_horizon_is_refused(tmp_path):
    doc = _trace_doc(tmp_path, "0,10\n1e17,5\n")
    assert "MAX_HORIZON_S" in _problem(doc, base_dir=tmp_path)


# -- YAML ------------------------------------------------------------------------------
def test_too_many_values_are_refused_while_composing(monkeypatch):
    """Counted while composing, not after: 1e6 inline ops took 241 s and 3.7 GB."""
    import simulator.spec.yamlio as yamlio
    import simulator.spec.yamlloaders as yamlloaders

    monkeypatch.setattr(yamlloaders, "MAX_EXPANDED_NODES", 1000)
    text = "ops:\n" + "".join(f"  - {{name: o{i}}}\n" for i in range(600))
    with pytest.raises(ScenarioError, match=r"more than 1,000 values \(MAX_EXPANDED_NODES\)"):
        yamlio.load_yaml_text(text, "x.yaml")
