"""A link's capacity steps in O(n log n) (issue 16, item 9: 100 k trace rows took 395 s,
32 k outages more than 200 s), equal to the pairwise definition."""

from __future__ import annotations

import signal

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.network.topology import Link


def _reference(link: Link, src: str) -> tuple:
    """The definition, pairwise: the last trace row at or before t, 0 inside an outage."""
    trace = link.bandwidth_trace if src == link.a else link.reverse_bandwidth_trace
    base = list(trace) or [(0.0, link.bandwidth_from(src))]
    if base[0][0] > 0:
        base.insert(0, (0.0, base[0][1]))
    steps = []
    for t in sorted({t for t, _ in base} | {t for o in link.outages for t in o}):
        if any(start <= t < end for start, end in link.outages):
            bps = 0.0
        else:
            bps = [b for time, b in base if time <= t][-1] if base[0][0] <= t else base[0][1]
        if not steps or steps[-1][1] != bps:
            steps.append((t, bps))
    return tuple(steps)


_TIMES = st.integers(0, 30).map(float)
_TRACE = st.lists(st.tuples(_TIMES, st.sampled_from([0.0, 1.0, 2.0])), max_size=8).map(
    lambda rows: [*sorted(rows, key=lambda r: r[0]), (31.0, 5.0)] if rows else []
)
_OUTAGES = st.lists(
    st.tuples(_TIMES, st.integers(1, 10).map(float)).map(lambda o: (o[0], o[0] + o[1])),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(trace=_TRACE, outages=_OUTAGES)
def test_capacity_steps_equal_the_pairwise_definition(trace, outages):
    link = Link("l", "a", "b", 0.0, 8.0, 4.0, bandwidth_trace=trace, outages=outages)
    for src in ("a", "b"):
        assert link.capacity_steps(src) == _reference(link, src)


def _alarm(_signum, _frame):
    raise TimeoutError("capacity_steps still running after 60 s (hang guard)")


def test_a_hundred_thousand_rows_and_outages_finish():
    """A hang guard, not a timing: the pairwise scan needed ~10^10 steps here."""
    rows = [(float(i), 1.0 + i % 7) for i in range(100_000)]
    outages = [(i + 0.25, i + 0.5) for i in range(0, 100_000, 3)]
    link = Link("l", "a", "b", 0.0, 8.0, 4.0, bandwidth_trace=rows, outages=outages)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        steps = link.capacity_steps("a")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert len(steps) == 100_000 + 2 * len(outages)
    assert steps[1] == (0.25, 0.0) and steps[2] == (0.5, 1.0)
