"""Random link behaviour, pure parts: bandwidth distributions, jitter, retransmissions,
piecewise-constant random capacity (simulator.network.impairments / capacity)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import SocsimError
from simulator.network.capacity import CHUNK, RandomCapacity, StepCapacity
from simulator.network.impairments import (
    CAPACITY_DISTRIBUTIONS,
    BandwidthDistribution,
    DirectionImpairments,
    Jitter,
    direction_seed,
    retransmissions,
)
from simulator.network.topology import Link

MBPS = 1e6


@pytest.mark.parametrize("dist", list(CAPACITY_DISTRIBUTIONS))
def test_bandwidth_distributions_have_the_mean_and_std_asked_for(dist):
    spec = BandwidthDistribution(dist, 8 * MBPS, 2 * MBPS, 0.1)  # cv 0.25: normal never clips
    draws = spec.sampler()(np.random.default_rng(1), 200_000)
    # standard error of the mean: 2 / sqrt(2e5) = 0.0045 Mbit/s; 6 of them
    assert draws.mean() == pytest.approx(8 * MBPS, abs=0.027 * MBPS)
    assert draws.std() == pytest.approx(2 * MBPS, rel=0.01)


def test_lognormal_and_gamma_parameters_in_closed_form():
    rng = np.random.default_rng(5)
    spec = BandwidthDistribution("lognormal", 10 * MBPS, 5 * MBPS, 0.1)
    sigma2 = math.log(1 + 0.25)  # cv = 0.5
    expected = np.random.default_rng(5).lognormal(math.log(10 * MBPS) - sigma2 / 2, sigma2**0.5, 4)
    assert np.array_equal(spec.sampler()(rng, 4), expected)
    spec = BandwidthDistribution("gamma", 10 * MBPS, 5 * MBPS, 0.1)
    expected = np.random.default_rng(5).gamma(4.0, 2.5 * MBPS, 4)  # shape 1/cv², scale mean cv²
    assert np.array_equal(spec.sampler()(np.random.default_rng(5), 4), expected)


def test_bad_distributions_are_refused():
    with pytest.raises(SocsimError, match="std < mean"):
        BandwidthDistribution("uniform", 8 * MBPS, 5 * MBPS, 0.1)  # low end 8 - 8.66 < 0
    with pytest.raises(SocsimError, match="did you mean 'lognormal'"):
        BandwidthDistribution("lognorm", 8 * MBPS, 1 * MBPS, 0.1)
    with pytest.raises(SocsimError, match="hold_s must be > 0"):
        BandwidthDistribution("normal", 8 * MBPS, 1 * MBPS, 0.0)
    with pytest.raises(SocsimError, match="bad options"):
        Jitter("exponential", {"max_s": 0.01})


def test_random_capacity_is_piecewise_constant_with_the_hold_period():
    spec = BandwidthDistribution("normal", 8 * MBPS, 8 * MBPS, 0.1)  # cv 1: clips often
    static = StepCapacity([(0.0, 8 * MBPS), (0.25, 0.0), (0.45, 8 * MBPS)])  # an outage
    capacity = RandomCapacity(static, spec, np.random.default_rng(3))
    draws = np.maximum(np.random.default_rng(3).normal(8 * MBPS, 8 * MBPS, CHUNK), 8e3)
    assert (draws == 8e3).any()  # the floor (0.1 % of the mean) is reached
    for k in range(8):
        for t in np.linspace(k * 0.1, (k + 1) * 0.1, 7)[:-1]:
            down = 0.25 <= t < 0.45
            assert capacity.at(t) == (0.0 if down else draws[k])
    # boundaries are k × hold as computed (3 × 0.1 is 0.30000000000000004, above 0.3)
    assert capacity.next_change_after(0.0) == 0.1
    assert capacity.next_change_after(0.2) == 0.25  # the outage starts before the next draw
    assert capacity.next_change_after(0.3) == 3 * 0.1
    assert capacity.next_change_after(3 * 0.1) == 4 * 0.1
    assert capacity.next_change_after(4 * 0.1) == 0.45
    assert capacity.next_change_after(0.45) == 5 * 0.1


def test_random_capacity_draws_do_not_depend_on_when_they_are_asked_for():
    spec = BandwidthDistribution("gamma", 8 * MBPS, 4 * MBPS, 0.01)
    dense = RandomCapacity(StepCapacity([(0.0, 1.0)]), spec, np.random.default_rng(9))
    sparse = RandomCapacity(StepCapacity([(0.0, 1.0)]), spec, np.random.default_rng(9))
    values = [dense.at(k * 0.01 + 0.005) for k in range(3 * CHUNK)]
    assert sparse.at(0.005) == values[0]
    assert sparse.at((2 * CHUNK + 7) * 0.01 + 0.005) == values[2 * CHUNK + 7]  # skips chunks
    with pytest.raises(SocsimError, match="in the past"):
        sparse.at(0.5)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-4, 10.0), st.floats(0.0, 1e4))
def test_the_interval_of_a_time_is_consistent_with_its_boundaries(hold_s, t):
    capacity = RandomCapacity(
        StepCapacity([(0.0, 1.0)]),
        BandwidthDistribution("lognormal", 1.0, 0.5, hold_s),
        np.random.default_rng(0),
    )
    k = capacity.interval(t)
    assert k * hold_s <= t < (k + 1) * hold_s
    assert capacity.next_change_after(t) > t  # the channel always moves on


def test_mean_transmissions_are_n_over_one_minus_p():
    rng = np.random.default_rng(11)
    n, p, runs = 100, 0.1, 20_000
    draws = np.array([retransmissions(rng, n, p) for _ in range(runs)])
    transmissions, rounds = n + draws[:, 0], draws[:, 1]
    # E[T] = N / (1 - p) = 111.1; Var[T] = N p / (1 - p)² = 12.35: 6 standard errors
    assert transmissions.mean() == pytest.approx(n / (1 - p), abs=6 * (12.35 / runs) ** 0.5)
    assert transmissions.var() == pytest.approx(n * p / (1 - p) ** 2, rel=0.05)
    # rounds R: P(R <= r) = (1 - p^r)^N, e.g. P(R <= 2) = 0.99^100 = 0.366
    for r in (2, 3, 4):
        expected = (1 - p**r) ** n
        tolerance = 6 * (expected * (1 - expected) / runs) ** 0.5
        assert (rounds <= r).mean() == pytest.approx(expected, abs=tolerance)
    assert ((rounds == 1) == (draws[:, 0] == 0)).all()


def test_no_loss_draws_nothing():
    rng = np.random.default_rng(2)
    assert retransmissions(rng, 1000, 0.0) == (0, 1)
    assert retransmissions(rng, 0, 0.3) == (0, 1)
    assert rng.random() == np.random.default_rng(2).random()  # the stream was not touched


def test_truncated_normal_jitter_is_never_negative_and_has_the_half_normal_mean():
    jitter = Jitter("normal_truncated", {"mean_s": 0.0, "std_s": 0.01})
    rng = np.random.default_rng(4)
    draws = np.array([jitter.draw(rng) for _ in range(40_000)])
    assert (draws >= 0).all()
    # mean 0 truncated at 0 is half-normal: std √(2/π) = 7.979 ms; its std 6.03 ms
    assert draws.mean() == pytest.approx(0.01 * (2 / math.pi) ** 0.5, abs=6 * 0.00603 / 200)


def _lossy_link(**extra) -> Link:
    return Link("up", "phone", "cloud", 0.02, 8e6, 8e6, **extra)


def test_a_direction_inflates_bits_by_its_retransmissions():
    link = _lossy_link(loss_rate=0.05, mtu_bytes=1000)
    state = DirectionImpairments(link, "phone", 7, 0)
    loss_rng = np.random.default_rng(direction_seed(7, 0, "up", "phone").spawn(3)[2])
    for nbytes in (1, 999, 1000, 123_456):
        packets = math.ceil(nbytes / 1000)
        extra, rounds = retransmissions(loss_rng, packets, 0.05)
        bits, got_rounds = state.inflate(nbytes * 8.0)
        assert got_rounds == rounds
        assert bits == (nbytes * 8.0 * (packets + extra) / packets if extra else nbytes * 8.0)


def test_jitter_never_reorders_deliveries_and_retransmissions_add_round_trips():
    link = _lossy_link(jitter=Jitter("uniform", {"max_s": 0.5}))
    state = DirectionImpairments(link, "phone", 1, 0)
    jitter_rng = np.random.default_rng(direction_seed(1, 0, "up", "phone").spawn(3)[1])
    first = 0.02 + jitter_rng.uniform(0.0, 0.5)
    assert state.delay_s(1.0, 1) == first
    second = 0.02 + jitter_rng.uniform(0.0, 0.5)
    assert 1.001 + second < 1.0 + first  # with seed 1 this draw would overtake the first:
    held = state.delay_s(1.001, 1)  # it is held back to arrive with it, not before
    assert 1.001 + held >= 1.0 + first and held == pytest.approx(first - 0.001, abs=1e-15)
    third = 0.02 + jitter_rng.uniform(0.0, 0.5)
    assert state.delay_s(2.0, 1) == third  # later, nothing to wait for
    fourth = 0.02 + jitter_rng.uniform(0.0, 0.5)
    assert state.delay_s(100.0, 3) == fourth + 2 * 2 * 0.02  # two retransmission rounds


def test_directions_have_their_own_streams_keyed_by_name():
    a = direction_seed(1, 0, "up", "phone")
    assert (
        np.random.default_rng(a).random()
        == np.random.default_rng(direction_seed(1, 0, "up", "phone")).random()
    )
    others = [
        direction_seed(1, 0, "up", "cloud"),
        direction_seed(1, 1, "up", "phone"),
        direction_seed(2, 0, "up", "phone"),
        direction_seed(1, 0, "down", "phone"),
    ]
    first = np.random.default_rng(a).random()
    assert all(np.random.default_rng(s).random() != first for s in others)


def test_link_validation_and_pickling():
    spec = BandwidthDistribution("normal", 8 * MBPS, 1 * MBPS, 0.1)
    with pytest.raises(SocsimError, match="not both"):
        _lossy_link(bandwidth_trace=((0.0, 8e6),), bandwidth_distribution=spec)
    with pytest.raises(SocsimError, match="loss_rate"):
        _lossy_link(loss_rate=1.0)
    link = _lossy_link(bandwidth_distribution=spec, jitter=Jitter("exponential", {"mean_s": 1}))
    assert link.stochastic and not _lossy_link().stochastic
    assert pickle.loads(pickle.dumps(link)) == link  # sweep workers receive scenarios
