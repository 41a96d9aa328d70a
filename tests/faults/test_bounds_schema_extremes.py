"""Every numeric key of the schema at its extremes (issue 16): a clear error or a run that
ends.

The keys are not listed by hand: :func:`numeric_keys` walks the schema tree
(``simulator.spec.definitions.SCENARIO`` and everything it reaches: records, lists, maps,
tagged variants from the registries, model sources) alongside a small base scenario that
uses most sections, and yields the YAML path of every number it can put a value at
(a key the base leaves out is added). Each value such as 0, -1, 1e-300, 1e300, 2**63,
nan or inf at that path must end in a ScenarioError, or in a run that finishes or raises
a SocsimError within a wall-clock guard: never a traceback, a hang or a memory bomb.
"""

from __future__ import annotations

import copy
import math
import signal
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.engine import simulate
from simulator.errors import ScenarioError, SocsimError
from simulator.schema import ListOf, MapOf, Number, Record, Schema, Tagged
from simulator.spec import parse_scenario
from simulator.spec.definitions import SCENARIO
from simulator.spec.linkdefs import TracePoint
from simulator.spec.modeldefs import MODEL_SOURCES, ModelChoice, common_keys

EXTREMES = (0, -1, 1e-300, 1e300, 2**63, 2**64 + 1, math.nan, math.inf, -math.inf, 0.5)
#: wall-clock guard of one example (refuse or finish), s
GUARD_S = 20


def base_document() -> dict:
    """Two nodes over a link with a radio, random bandwidth and jitter; DVFS and thermal;
    an inline model; one app per arrival process."""
    cpu = {
        "kind": "cpu",
        "cores": 2,
        "cores_per_op": 1,
        "peak_gflops": {"fp32": 1},
        "idle_w": 0.1,
        "active_w": 1.0,
        "dvfs": {
            "points": [{"mhz": 1000, "mv": 800}, {"mhz": 2000, "mv": 1000}],
            "governor": {"name": "ondemand"},
        },
    }
    arrivals = [
        {"process": "periodic", "period_ms": 10},
        {"process": "poisson", "rate_hz": 100},
        {"process": "closed_loop", "concurrency": 2},
        {"process": "trace", "times_ms": [0, 5]},
    ]
    return {
        "name": "extremes",
        "seed": 1,
        "duration_s": 0.05,
        "nodes": {
            "phone": {
                "role": "device",
                "sync_us": 10,
                "battery_wh": 10,
                "thermal": {"resistance_k_per_w": 10, "capacitance_j_per_k": 5},
                "units": {"cpu": cpu},
            },
            "cloud": {
                "role": "cloud",
                "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 100}}},
            },
        },
        "links": {
            "up": {
                "ends": ["phone", "cloud"],
                "latency_ms": 5,
                "bandwidth_mbps": 10,
                "radio": {"model": "constant", "tx_w": 1, "rx_w": 0.5},
                "bandwidth_distribution": {
                    "dist": "lognormal",
                    "mean_mbps": 10,
                    "cv": 0.3,
                    "hold_ms": 10,
                },
                "reverse_bandwidth_trace_mbps": [[0, 10], [0.01, 5]],
                "outages_s": [[0.02, 0.021]],
                "jitter": {"dist": "exponential", "mean_ms": 1},
            }
        },
        "models": {
            "m": {
                "ops": [
                    {"name": "a", "kind": "conv", "flops": 1e6, "params": 10, "output_elems": 100},
                    {"name": "b", "kind": "fc", "flops": 1e5, "time_ms": {"cloud.gpu": 0.1}},
                ],
                "edges": [{"src": "a", "dst": "b", "bytes": 400}],
            }
        },
        "workload": [
            {"app": f"app{i}", "model": "m", "source": "phone", "arrival": arrival, "count": 3}
            for i, arrival in enumerate(arrivals)
        ],
        "placement": {
            "policy": "manual",
            "rules": [{"ops": "b", "unit": "cloud.gpu"}],
            "default": "phone.cpu",
        },
    }


def _children(schema: Schema, value) -> Iterator[tuple[object, Schema, bool]]:
    """``(key, child schema, present)`` for the parts of ``value`` that ``schema`` checks."""
    if isinstance(schema, ModelChoice):
        for key, (_, source) in MODEL_SOURCES.items():
            if isinstance(value, dict) and key in value:
                yield from _children(source, value)
        yield from _children(common_keys(), value)
    elif isinstance(schema, Record):
        for key, field in schema.fields.items():
            if isinstance(value, dict):
                yield key, field.schema, key in value
    elif isinstance(schema, Tagged):
        if isinstance(value, dict):
            variant = schema.variants().get(value.get(schema.tag, schema.default))
            if variant is not None:
                yield from _children(variant, value)
    elif isinstance(schema, TracePoint):
        for i, part in enumerate(schema._PARTS):
            yield i, part, True
    elif isinstance(schema, ListOf) and isinstance(value, list):
        for i in range(len(value)):
            yield i, schema.item, True
    elif isinstance(schema, MapOf) and isinstance(value, dict):
        for key in value:
            yield key, schema.value, True


def numeric_keys(schema: Schema = SCENARIO, value=None, path=()) -> Iterator[tuple]:
    """YAML paths (tuples of keys and indices) of every number the schema checks in the
    base document, plus numeric keys the base leaves out of a record it has."""
    value = base_document() if value is None else value
    for key, child, present in _children(schema, value):
        here = (*path, key)
        if isinstance(child, Number):
            yield here
        elif present:
            yield from numeric_keys(child, value[key], here)


KEYS = sorted(set(numeric_keys()), key=str)


def test_the_walk_reaches_the_numbers_of_every_section():
    reached = {tuple(k for k in key if isinstance(k, str))[-1] for key in KEYS}
    for key in ("cores", "count", "duration_s", "offset_ms", "hold_ms", "concurrency"):
        assert key in reached
    for key in ("resistance_k_per_w", "capacitance_j_per_k", "seed", "params", "mhz"):
        assert key in reached
    assert len(KEYS) > 60


def _with(path: tuple, extreme) -> dict:
    doc = copy.deepcopy(base_document())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = extreme
    return doc


class Hang(BaseException):
    """Not an Exception: the engine must not turn it into a RunFailedError."""


def _alarm(_signum, _frame):
    raise Hang(f"neither refused nor finished within {GUARD_S} s")


def refuse_or_finish(doc: dict) -> str:
    """'refused', 'ran' or 'failed' (a SocsimError while running); anything else raises."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(GUARD_S)
    try:
        try:
            scenario = parse_scenario(doc)
        except ScenarioError:
            return "refused"
        try:
            simulate(scenario, trace="none")
        except SocsimError:
            return "failed"
        return "ran"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_the_base_document_runs():
    assert refuse_or_finish(base_document()) == "ran"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(path=st.sampled_from(KEYS), extreme=st.sampled_from(EXTREMES))
def test_each_numeric_key_at_an_extreme_is_refused_or_runs(path, extreme):
    assert refuse_or_finish(_with(path, extreme)) in ("refused", "ran", "failed")


@pytest.mark.slow
@pytest.mark.parametrize("extreme", EXTREMES, ids=str)
def test_every_numeric_key_at_every_extreme(extreme):
    """The exhaustive variant (a few minutes): the sampled test covers the same code."""
    for path in KEYS:
        assert refuse_or_finish(_with(path, extreme)) in ("refused", "ran", "failed"), path
