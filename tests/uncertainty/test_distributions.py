"""The sampler: draws stay in the field's range (hypothesis), truncation is a true
truncated normal (hand-computed half-normal mean), streams are spawned as documented."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.schema import Context, Loc, Number
from simulator.spec.definitions import UNIT, WATTS
from simulator.spec.linkdefs import LINK
from simulator.spec.uncertain import MC_TAG, SampleKey, Uncertain, draw_document
from simulator.uncertainty.distributions import Interval, Normal, Uniform

#: the shipped uncertain fields' ranges: (0, 1], [0, inf), (0, inf), [0, MAX_POWER_W]
FIELDS = (
    UNIT.fields["efficiency"].schema.value,
    UNIT.fields["dispatch_us"].schema,
    UNIT.fields["peak_gflops"].schema.value,
    Uncertain(WATTS),
    LINK.fields["bandwidth_mbps"].schema,
)


def _inside(field: Uncertain) -> st.SearchStrategy[float]:
    interval = field.interval()
    high = min(interval.high, 1e6)
    return st.floats(interval.low, high, allow_nan=False).filter(lambda v: v in interval)


@st.composite
def normal_fields(draw):
    field = draw(st.sampled_from(FIELDS))
    mean = draw(_inside(field))
    sd = draw(st.floats(0, 1e4, allow_nan=False))
    return field, Normal(mean, sd)


@st.composite
def uniform_fields(draw):
    field = draw(st.sampled_from(FIELDS))
    a, b = draw(_inside(field)), draw(_inside(field))
    return field, Uniform(min(a, b), max(a, b))


SEEDS = st.integers(0, 2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(normal_fields(), SEEDS, st.integers(0, 10_000))
def test_a_truncated_normal_draw_lies_in_the_field_range(case, seed, index):
    field, dist = case
    value = dist.draw(SampleKey(seed, index).field_rng("x"), field.interval())
    assert math.isfinite(value) and value in field.interval()
    # the schema accepts what the sampler draws
    ctx = Context()
    assert field.check(value, Loc("x"), ctx) is not None and not ctx.problems


@settings(max_examples=300, deadline=None)
@given(uniform_fields(), SEEDS, st.integers(0, 10_000))
def test_a_uniform_draw_lies_between_its_bounds(case, seed, index):
    field, dist = case
    value = dist.draw(SampleKey(seed, index).field_rng("x"), field.interval())
    assert dist.low <= value <= dist.high and value in field.interval()


def test_truncation_gives_the_half_normal_mean():
    """N(0, 1) truncated to [0, inf) (a `dispatch_us`-like field) is the half-normal,
    mean sqrt(2/pi) = 0.7979, sd sqrt(1 - 2/pi) = 0.6028: 4,000 draws land within
    4 standard errors (0.038); none is negative."""
    field = Uncertain(Number("µs", 1e-6, ge=0))
    dist = Normal(0.0, 1.0)
    draws = np.array(
        [dist.draw(SampleKey(5, i).field_rng("d"), field.interval()) for i in range(4000)]
    )
    assert draws.min() >= 0
    assert draws.mean() == pytest.approx(math.sqrt(2 / math.pi), abs=4 * 0.6028 / math.sqrt(4000))


def test_an_excluded_bound_is_never_drawn():
    """Efficiency is > 0: a normal centred on the bound with a tiny sd stays above it."""
    interval = Interval(0.0, 1.0, low_open=True)
    draws = [
        Normal(1e-300, 1e-300).draw(SampleKey(1, i).field_rng("e"), interval) for i in range(200)
    ]
    assert min(draws) > 0


def test_the_sample_stream_is_the_spawned_child():
    """Sample i is SeedSequence([seed, MC_TAG]).spawn(n)[i], whatever n > i."""
    children = np.random.SeedSequence([42, MC_TAG]).spawn(7)
    for i in (0, 3, 6):
        ours = SampleKey(42, i).sequence()
        assert (ours.generate_state(4) == children[i].generate_state(4)).all()


DOC = {
    "name": "d",
    "seed": 9,
    "nodes": {
        "phone": {
            "units": {
                "cpu": {
                    "kind": "cpu",
                    "efficiency": {"default": {"mean": 0.5, "sd": 0.1}},
                    "dispatch_us": {"low": 1, "high": 3},
                }
            }
        }
    },
}


def test_draw_document_is_pure_and_deterministic():
    before = repr(DOC)
    one, drawn = draw_document(DOC, SampleKey(9, 4))
    again, drawn_again = draw_document(DOC, SampleKey(9, 4))
    assert repr(DOC) == before  # the input is untouched
    assert one == again and drawn == drawn_again
    cpu = one["nodes"]["phone"]["units"]["cpu"]
    assert cpu["efficiency"]["default"] == drawn["nodes.phone.units.cpu.efficiency.default"]
    assert 1 <= cpu["dispatch_us"] <= 3
    other, _ = draw_document(DOC, SampleKey(9, 5))
    assert other != one


def test_a_field_draws_the_same_value_whatever_else_is_uncertain():
    """Streams are keyed by YAML path: making another field uncertain (or certain)
    leaves this one's draws alone."""
    alone = {
        **DOC,
        "nodes": {
            "phone": {"units": {"cpu": {"kind": "cpu", "dispatch_us": {"low": 1, "high": 3}}}}
        },
    }
    for i in range(5):
        path = "nodes.phone.units.cpu.dispatch_us"
        assert (
            draw_document(alone, SampleKey(9, i))[1][path]
            == draw_document(DOC, SampleKey(9, i))[1][path]
        )
