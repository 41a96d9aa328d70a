"""Execution-time factors (mean 1, the given cv) and processor sharing under a background
load: hand-computed values and properties (simulator/hardware/variation.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.errors import SocsimError
from simulator.hardware.variation import BackgroundLoad, TimeVariation, variation_for

N = 400_000


@pytest.mark.parametrize(
    ("distribution", "cv"), [("lognormal", 0.3), ("gamma", 0.3), ("gamma", 2.0), ("exponential", 1)]
)
def test_factors_have_mean_one_and_the_given_cv(distribution, cv):
    factors = TimeVariation(distribution, cv).draw(np.random.default_rng(5), N)
    # the sample mean's sd is cv / sqrt(N) (0.05 % at cv 0.3, 0.3 % at cv 2): 5 sd
    assert abs(factors.mean() - 1) < 5 * cv / math.sqrt(N)
    assert factors.std() / factors.mean() == pytest.approx(cv, rel=0.03)
    assert (factors > 0).all()


def test_exponential_is_cv_one_and_deterministic_is_one():
    assert TimeVariation("exponential", 0.2).cv == 1.0  # fixed by the distribution
    assert TimeVariation("deterministic", 0.5).cv == 0.0
    assert (TimeVariation("lognormal", 0.0).draw(np.random.default_rng(1), 10) == 1).all()
    assert variation_for({"default": TimeVariation("deterministic")}, "conv") is None


def test_kind_entry_wins_over_default():
    conv, rest = TimeVariation("gamma", 0.5), TimeVariation("lognormal", 0.1)
    assert variation_for({"conv": conv, "default": rest}, "conv") is conv
    assert variation_for({"conv": conv, "default": rest}, "fc") is rest
    assert variation_for({"conv": conv}, "fc") is None


def test_unknown_distribution_is_refused_with_the_valid_names():
    with pytest.raises(SocsimError, match="'weibull'; valid: deterministic, exponential"):
        TimeVariation("weibull", 0.2)


def test_constant_background_divides_the_speed():
    assert BackgroundLoad.constant(0.5).stretch_s(3.0, 1e-3) == 2e-3
    assert BackgroundLoad.constant(0.0).stretch_s(3.0, 1e-3) == 1e-3
    assert BackgroundLoad.constant(0.75).stretch_s(0.0, 1.0) == 4.0


def test_trace_background_hand_computed():
    load = BackgroundLoad(((1.0, 0.5), (2.0, 0.0)))
    # from 0.5: 0.5 s at full speed, then 1 s at half speed (0.5 s of work) = 1.0 s of work
    assert load.stretch_s(0.5, 1.0) == 1.5
    # 0.2 s more work after t = 2, back at full speed
    assert load.stretch_s(0.5, 1.2) == pytest.approx(1.7, abs=1e-15)
    assert load.stretch_s(1.5, 0.25) == 0.5  # inside the half-speed step
    assert load.utilisation_at(0.99) == 0.0 and load.utilisation_at(1.0) == 0.5


@given(
    st.lists(st.floats(0, 0.99), min_size=1, max_size=6),
    st.floats(0, 10),
    st.floats(1e-6, 5),
)
def test_work_done_over_the_stretched_time_is_the_work(utilisations, start_s, work_s):
    """∫ (1 - u(t)) dt over [start, start + stretch] = work, on the union of breakpoints."""
    load = BackgroundLoad(tuple((float(k), u) for k, u in enumerate(utilisations)))
    end_s = start_s + load.stretch_s(start_s, work_s)
    times = sorted({start_s, end_s, *(t for t, _ in load.points if start_s < t < end_s)})
    done = sum((b - a) * (1 - load.utilisation_at(a)) for a, b in itertools.pairwise(times))
    assert done == pytest.approx(work_s, rel=1e-9)


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (((0.0, 1.0),), r"utilisation must be in \[0, 0.99\]"),
        (((1.0, 0.2), (1.0, 0.3)), "times must increase"),
        ((), "at least one"),
    ],
)
def test_bad_background_is_refused(points, message):
    with pytest.raises(SocsimError, match=message):
        BackgroundLoad(points)
