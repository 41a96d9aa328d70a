"""The request book: under ``trace="none"`` a request's record is released when it
completes or is dropped, and the summary comes from compact figures that are the same at
every trace level, bit for bit (checked on every shipped scenario)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from engine.test_adaptive import adaptive_doc
from engine.test_battery import battery_doc

from simulator.engine import Engine, RunRecord, plan_replicas, simulate
from simulator.engine.book import RequestBook
from simulator.platform import CostOracle
from simulator.results.run_result import RequestFigures
from simulator.spec import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
#: every shipped scenario: each runs in ~1.7 s or less at trace full
SHIPPED = sorted(
    path.relative_to(ROOT)
    for folder in ("examples", "score")
    for path in (ROOT / "scenarios" / folder).glob("*.yaml")
)


def _request(rid: int, arrival_s: float, deadline_s: float | None):
    """A stand-in record: the book reads only these fields."""
    entry = SimpleNamespace(deadline_s=deadline_s, app="a")
    return SimpleNamespace(
        rid=rid, arrival_s=arrival_s, app=SimpleNamespace(entry=entry), finish_s=None
    )


def _four_requests(keep_records: bool):
    """Arrivals 0, 1, 2, 3 s, deadline 1 s: #2 done at 2.5 s (0.5 s, met), #0 at 3 s
    (3 s, missed), #1 dropped, #3 in flight."""
    book = RequestBook(keep_records)
    requests = [_request(k, float(k), 1.0) for k in range(4)]
    for request in requests:
        book.add(request)
    book.complete(requests[2], 2.5)
    book.complete(requests[0], 3.0)
    book.drop(requests[1], "timed out")
    return book, requests


@pytest.mark.parametrize("keep_records", [True, False])
def test_figures_are_hand_computed_in_id_order(keep_records):
    book, requests = _four_requests(keep_records)
    figures = book.figures()
    assert figures.issued == 4
    assert figures.latency_s.tolist() == [3.0, 0.5]  # by id, not by completion
    assert (figures.first_arrival_s, figures.last_finish_s) == (0.0, 3.0)
    assert (figures.with_deadline, figures.deadline_met) == (2, 1)
    assert requests[2].finish_s == 2.5 and requests[1].drop_reason == "timed out"


def test_without_records_only_requests_in_flight_are_held():
    book, requests = _four_requests(keep_records=False)
    assert list(book.current()) == [requests[3]]
    assert book.records() == []
    assert book.get(0) is None and book.get(1) is None and book[3] is requests[3]
    with pytest.raises(KeyError):
        book[2]
    with pytest.raises(TypeError):
        iter(book)  # records() or current(), never ids 0, 1, ... by index


def test_with_records_every_request_is_held_to_the_end():
    book, requests = _four_requests(keep_records=True)
    assert book.records() == requests and list(book.current()) == requests
    assert book.get(0) is requests[0]
    again = _request(3, 3.0, 1.0)
    book[3] = again  # a fallback attempt replaces the record
    assert book.records()[3] is again


def test_an_empty_book_has_no_figures():
    figures = RequestBook(keep_records=False).figures()
    assert figures.issued == 0 and len(figures.latency_s) == 0
    assert math.isnan(figures.first_arrival_s) and math.isnan(figures.last_finish_s)


def test_ids_are_issued_in_order():
    book = RequestBook(keep_records=False)
    with pytest.raises(ValueError, match="request id 1, expected 0"):
        book.add(_request(1, 0.0, None))


def test_inconsistent_figures_are_rejected():
    with pytest.raises(ValueError, match="deadline counts"):
        RequestFigures(1, np.array([0.1]), 0.0, 0.1, with_deadline=1, deadline_met=2)
    with pytest.raises(ValueError, match="2 completed of 1 issued"):
        RequestFigures(1, np.array([0.1, 0.2]), 0.0, 0.2, with_deadline=0, deadline_met=0)


def _run(doc: dict, keep_records: bool) -> RunRecord:
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    engine = Engine(scenario, plan_replicas(scenario, oracle), oracle, keep_records=keep_records)
    return engine.run()


def test_timeouts_and_fallbacks_release_every_record():
    # an outage: requests time out; the adaptive app restarts them on its fallback
    doc = adaptive_doc(
        [0, 1.0, 1.1, 1.2], {"outages_s": [[1.0, 5.0]]}, {"stale_ms": 50}, timeout_ms=200
    )
    kept, released = _run(doc, keep_records=True), _run(doc, keep_records=False)
    assert any(r.fell_back for r in kept.requests.records())  # the path is exercised
    assert list(released.requests.current()) == [] and released.requests.records() == []
    a, b = kept.requests.figures(), released.requests.figures()
    assert np.array_equal(a.latency_s, b.latency_s) and a.issued == b.issued == 4
    assert (a.first_arrival_s, a.last_finish_s) == (b.first_arrival_s, b.last_finish_s)
    assert released.ledger.memory_now == released.ledger.weights  # every buffer freed


def test_dropped_requests_are_released_and_counted():
    # a plain offloading app: the requests caught in the outage are dropped
    doc = adaptive_doc([0, 1.0, 1.1], {"outages_s": [[1.0, 5.0]]}, None, timeout_ms=200)
    app = doc["workload"][0]
    del app["dispatch"], app["adaptive"], app["replicas"]
    app["placement"] = {"policy": "offload", "node": "cloud"}
    kept, released = _run(doc, keep_records=True), _run(doc, keep_records=False)
    drops = [r.drop_reason for r in kept.requests.records() if r.drop_reason]
    assert len(drops) == 2 and "unfinished after 200 ms" in drops[0]
    assert list(released.requests.current()) == []
    assert released.requests.issued == 3 and released.requests.completed == 1


def test_a_flat_battery_counts_the_requests_in_flight_as_dropped():
    scenario = parse_scenario(battery_doc(0.001))
    full, none = simulate(scenario, trace="full"), simulate(scenario, trace="none")
    in_flight = full.requests["drop_reason"].str.startswith("battery").sum()
    assert in_flight >= 1
    assert none.summary["dropped"] == full.summary["dropped"] == in_flight
    assert none.summary == full.summary


def _same(a, b) -> bool:
    nan = isinstance(a, float) and math.isnan(a) and math.isnan(b)
    return type(a) is type(b) and (a == b or nan)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_scenarios_summarise_identically_at_every_level(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    scenario = load_scenario(path)
    full = simulate(scenario, trace="full")
    for level in ("summary", "none"):
        other = simulate(scenario, trace=level).summary
        assert other.keys() == full.summary.keys()
        for key, value in full.summary.items():
            assert _same(value, other[key]), (level, key, value, other[key])
    # ... and equal to the figures computed from the full request table
    requests = full.requests
    done = requests[requests["status"] == "completed"]
    latency = done["latency_s"].to_numpy()
    summary = full.summary
    assert summary["requests"] == len(requests) and summary["completed"] == len(done)
    if len(done):
        assert summary["latency_mean_s"] == float(latency.mean())
        assert summary["latency_p99_s"] == float(np.percentile(latency, 99))
        span_s = float(done["finish_s"].max() - requests["arrival_s"].min())
        assert summary["throughput_rps"] == len(done) / span_s
    with_deadline = done[done["deadline_s"].notna()]
    if len(with_deadline):
        assert summary["deadline_met_rate"] == float(with_deadline["deadline_met"].mean())
