"""Engine invariants over random scenarios: causality, capacity, energy = ∫ P dt, nothing lost,
and the consistency of one lone request with the pure list-schedule estimate."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from strategies import scenarios

from simulator.engine import plan_apps, simulate
from simulator.placement.attribution import CAUSES, request_shares
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _no_overlap(intervals: pd.DataFrame, start: str, end: str) -> bool:
    ordered = intervals.sort_values([start, end])
    starts = ordered[start].to_numpy()
    ends = ordered[end].to_numpy()
    return bool(np.all(starts[1:] >= ends[:-1] - 1e-15))


def _max_concurrent(intervals: pd.DataFrame) -> int:
    """Largest number of [start, end) intervals open at once (zero-length ones ignored)."""
    events = sorted(
        [(s, 1) for s, e in zip(intervals["start_s"], intervals["end_s"], strict=True) if e > s]
        + [(e, -1) for s, e in zip(intervals["start_s"], intervals["end_s"], strict=True) if e > s]
    )
    level = peak = 0
    for _, step in events:  # at equal times ends (-1) sort before starts (+1)
        level += step
        peak = max(peak, level)
    return peak


def _minus_outages(hops: pd.DataFrame, outages) -> list[tuple[float, float]]:
    """Serialisation intervals with the link's outages cut out (nothing is sent then)."""
    pieces = list(zip(hops["start_s"], hops["end_s"], strict=True))
    for down_start, down_end in outages:
        cut = []
        for a, b in pieces:
            cut += [(a, min(b, down_start))] if a < down_start else []
            cut += [(max(a, down_end), b)] if b > down_end else []
        pieces = [(a, b) for a, b in cut if b > a]
    return pieces


def _integrate_power(
    intervals: list[tuple[float, float]],
    base_w: float,
    extra_w: float,
    window: tuple[float, float],
    busy_or_not: bool = False,
) -> float:
    """∫ power dt over the window for a component drawing base_w plus extra_w per busy
    interval (or once while any is open, ``busy_or_not``), computed on the union of event
    boundaries (independent of the ledger's formula)."""
    points = sorted({window[0], window[1], *[t for iv in intervals for t in iv]})
    total = 0.0
    for a, b in itertools.pairwise(points):
        mid = (a + b) / 2
        busy = sum(1 for s, e in intervals if s <= mid < e)
        if busy_or_not:
            busy = min(busy, 1)
        total += (base_w + extra_w * busy) * (b - a)
    return total


def check_invariants(doc: dict, result) -> None:
    scenario = parse_scenario(doc)
    graph = scenario.models["m"]
    requests, ops, transfers = result.requests, result.ops, result.transfers
    count = doc["workload"][0]["count"]
    # nothing lost: every request completes (every op of it ran once) or is dropped with
    # a reason, which only an empty battery gives; a battery never goes below zero
    assert len(requests) <= count
    dropped = requests[requests["status"] == "dropped"]
    assert (dropped["drop_reason"].str.contains("battery")).all()
    stopped = bool(result.batteries["empty_at_s"].notna().any())
    if stopped:
        assert (result.batteries["remaining_j"] == 0).any()
    else:
        assert len(requests) == count and not len(dropped)
    assert (result.batteries["remaining_j"] >= 0).all()
    assert (result.batteries["used_j"] <= result.batteries["capacity_j"] * (1 + 1e-12)).all()
    done = requests[requests["status"] == "completed"]
    assert done["finish_s"].notna().all()
    ran = ops.groupby("request_id").size()
    assert (ran.loc[done["request_id"]] == len(graph)).all()
    assert not ops.duplicated(["request_id", "op"]).any()
    # causality
    assert (ops["start_s"] >= ops["ready_s"]).all()
    assert (ops["end_s"] >= ops["start_s"]).all()
    by_key = ops[ops["request_id"].isin(done["request_id"])].set_index(["request_id", "op"])
    arrival = requests.set_index("request_id")["arrival_s"]
    assert (ops["ready_s"].to_numpy() >= arrival.loc[ops["request_id"]].to_numpy()).all()
    for edge in graph.edges() if len(done) else ():
        # by request id: with lost packets a later request's tensor may overtake
        src = by_key.xs(edge.src, level="op")["end_s"].sort_index()
        dst = by_key.xs(edge.dst, level="op")["start_s"].sort_index()
        assert (dst >= src).all(), f"{edge.dst} started before its input {edge.src} finished"
    finish = done.set_index("request_id")["finish_s"]
    last_end = ops[ops["request_id"].isin(done["request_id"])].groupby("request_id")["end_s"].max()
    assert (finish.loc[last_end.index] >= last_end).all()
    # capacity: a unit runs at most `slots` ops at once; a link direction one hop at a time
    for uid, group in ops.groupby("unit"):
        assert _max_concurrent(group) <= scenario.platform.unit(uid).slots
    hops = transfers[transfers["kind"] == "network"]
    for (link_name, _), group in hops.groupby(["link", "src_node"]):
        link = scenario.platform.network.links[link_name]
        if link.sharing == "fifo":
            assert _no_overlap(group, "start_s", "end_s")
        for start, end in link.outages:  # nothing completes while the link is down
            assert not ((group["end_s"] > start) & (group["end_s"] < end)).any()
    assert (hops["start_s"] >= hops["queued_s"]).all()
    platform = scenario.platform
    for (link_name, src), group in hops.groupby(["link", "src_node"]):
        link = platform.network.links[link_name]
        dst = link.b if src == link.a else link.a
        # a download (the only radio on the hop receives) propagates before it is queued:
        # its radio connects when the first bytes reach the device (docs/energy.md)
        download = (
            link.radio is not None
            and platform.role_of(dst) == "device"
            and platform.role_of(src) != "device"
        )
        after_s = 0.0 if download else link.latency_s
        # jitter is never negative; a path delivers in the order it sent unless lost
        # packets hold a transfer back for retransmission round trips
        assert (group["arrive_s"] >= group["end_s"] + after_s).all()
        if link.loss_rate == 0:
            delivered = group.sort_values(["end_s", "arrive_s"])["arrive_s"].to_numpy()
            assert (np.diff(delivered) >= 0).all()
    check_power_series(scenario, result)
    if stopped:
        return  # ops cut short by the battery are not in the trace (tests/engine/test_battery.py)
    # energy = ∫ power dt, and never below idle power x window
    window = (result.summary["window_start_s"], result.summary["window_end_s"])
    span = window[1] - window[0]
    for row in result.units.itertuples():
        unit = scenario.platform.unit(row.unit)
        mine = ops[ops["unit"] == row.unit]
        intervals = list(zip(mine["start_s"], mine["end_s"], strict=True))
        share = unit.op_cores / unit.cores  # an op draws its cores' share of the increment
        expected = _integrate_power(
            intervals, unit.idle_w, (unit.active_w - unit.idle_w) * share, window
        )
        assert row.energy_j == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert row.energy_j >= unit.idle_w * span * (1 - 1e-12)
    for link in scenario.platform.network.links.values():
        if link.radio is None:
            continue
        rows = result.energy[result.energy["component"] == f"radio:{link.name}"]
        sent = hops[(hops["link"] == link.name) & (hops["src_node"] == "phone")]
        got = hops[(hops["link"] == link.name) & (hops["dst_node"] == "phone")]
        sent, got = _minus_outages(sent, link.outages), _minus_outages(got, link.outages)
        radio = link.radio
        expected = _integrate_power(
            sent,
            radio.idle_w,
            radio.tx_w - radio.idle_w,
            window,
            busy_or_not=True,  # a constant radio is sending or not, whatever the flows
        ) + _integrate_power(
            got,
            0.0,
            radio.rx_w - radio.idle_w,
            window,
            busy_or_not=True,
        )
        assert rows["energy_j"].sum() == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert result.summary["energy_j"] == pytest.approx(result.energy["energy_j"].sum(), rel=1e-12)


def check_power_series(scenario, result) -> None:
    """The ``power`` rows tile the window per component and integrate to its ``energy``;
    ``temperature`` follows the RC closed form from point to point at the node's power
    (the sum of its components' ``power`` rows); ``dvfs_levels`` is each op's level."""
    w0, w1 = result.summary["window_start_s"], result.summary["window_end_s"]
    power = result.power
    for row in result.energy.itertuples():
        mine = power[power["component"] == row.component]
        assert mine["energy_j"].sum() == pytest.approx(row.energy_j, rel=1e-9, abs=1e-12)
        if w1 == w0:
            assert mine.empty
            continue
        start, end, watts = (mine[c].to_numpy() for c in ("start_s", "end_s", "power_w"))
        assert start[0] == w0 and end[-1] == w1
        assert np.array_equal(start[1:], end[:-1]) and (end > start).all()
        assert (watts[1:] != watts[:-1]).all()  # adjacent equal powers are merged
        if row.kind == "compute":
            assert watts.min() >= scenario.platform.unit(row.component).idle_w - 1e-12
    assert (power["energy_j"] >= 0).all()
    # a unit's rows change only at an op start or end (ops an empty battery cut short,
    # at most one per slot, are not in the trace); a radio's at most at its states' rows
    slots = sum(scenario.platform.unit(uid).slots for uid in scenario.platform.unit_ids)
    bound = 2 * (len(result.ops) + slots) + len(result.radio_states) + len(result.energy)
    assert len(power) <= bound
    for node, points in result.temperature.groupby("node"):
        model = scenario.platform.nodes[node].thermal
        t, temp, watts = (points[c].to_numpy() for c in ("time_s", "temperature_c", "power_w"))
        assert t[0] == 0 and t[-1] == w1 and (np.diff(t) >= 0).all()
        for k in range(len(t) - 1):
            after = model.temperature_after(temp[k], watts[k], t[k + 1] - t[k])
            assert temp[k + 1] == pytest.approx(after, rel=1e-9, abs=1e-9)
        mine = power[power["node"] == node]
        last_at_instant = points.drop_duplicates("time_s", keep="last")
        for p in last_at_instant.itertuples():
            if w0 <= p.time_s < w1:
                now = mine[(mine["start_s"] <= p.time_s) & (p.time_s < mine["end_s"])]
                assert now["power_w"].sum() == pytest.approx(p.power_w, rel=1e-9, abs=1e-9)
        row = result.thermal.set_index("node").loc[node]
        throttled = points["throttled"].to_numpy()[:-1]
        assert row["throttled_s"] == pytest.approx(np.diff(t)[throttled].sum(), abs=1e-12)
        assert row["final_temperature_c"] == temp[-1]
        assert row["max_temperature_c"] == temp.max()
    for uid, changes in result.dvfs_levels.groupby("unit"):
        ops = result.ops[result.ops["unit"] == uid]
        at = np.searchsorted(changes["time_s"].to_numpy(), ops["start_s"].to_numpy(), "right")
        stepped = changes["level"].to_numpy()[at - 1]
        tied = ops["start_s"].duplicated(keep=False).to_numpy()  # the last of a tie holds
        assert ((stepped == ops["level"].to_numpy()) | tied).all()


@SETTINGS
@given(scenarios(power_management=True))
def test_power_temperature_and_levels_on_random_scenarios(doc):
    check_power_series(parse_scenario(doc), simulate(parse_scenario(doc)))


@SETTINGS
@given(scenarios())
def test_invariants_hold_on_random_scenarios(doc):
    result = simulate(parse_scenario(doc))
    check_invariants(doc, result)


@SETTINGS
@given(scenarios(requests=1, power_management=True))
def test_lone_request_matches_the_list_schedule_estimate(doc):
    """Also with DVFS units under a random governor: the estimate replays each governor
    (tests/placement/test_dvfs_estimate.py), so the levels are the engine's too."""
    doc["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 1}  # arrives at t = 0
    doc["nodes"]["phone"].pop("battery_wh", None)  # a run the battery cannot cut short
    doc["nodes"]["phone"].pop("thermal", None)  # the estimate assumes an unthrottled unit
    for link in doc["links"].values():  # the estimate's setting: constant, FIFO, always up
        link["sharing"] = "fifo"
        link.pop("outages_s", None)
        link.pop("bandwidth_trace_mbps", None)
        for key in ("reverse_bandwidth_distribution", "jitter", "loss_rate"):
            link.pop(key, None)
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["a"]
    predicted = estimate(plan, oracle)
    result = simulate(scenario)
    latency = result.requests["latency_s"].iloc[0]
    hops = result.transfers[result.transfers["kind"] == "network"]
    if (hops["start_s"] == hops["queued_s"]).all() and not result.ops["memory_stall_s"].any():
        # no two moves of the request met on a link direction, no two ops on one node's
        # DRAM slowed each other down (the estimate does not model either): bit-for-bit
        assert latency == predicted.latency_s
        ops = result.ops.set_index("op").loc[list(plan.ops)]
        assert tuple(ops["start_s"]) == predicted.start_s
        assert tuple(ops["level"]) == predicted.levels
        # and explain's attribution of a lone, uncontended request is zero everywhere (to
        # rounding: a move's replayed time is its arrival minus its start, added back)
        arrival = float(result.requests["arrival_s"].iloc[0])
        shares = request_shares(
            plan, oracle, predicted.latency_s, latency, arrival, result.ops, result.transfers
        )
        assert list(shares) == list(CAUSES)
        assert all(abs(share) <= 1e-12 * max(latency, 1.0) for share in shares.values())
    else:  # waiting and stalls add; the sums run in another order: allow rounding (1e-12)
        assert latency >= predicted.latency_s * (1 - 1e-12)


@settings(max_examples=20, deadline=None)
@given(scenarios())
def test_same_scenario_and_seed_give_identical_tables(doc):
    first = simulate(parse_scenario(doc))
    second = simulate(parse_scenario(doc))
    for name, table in first.tables().items():
        pd.testing.assert_frame_equal(table, second.tables()[name], check_exact=True)
    assert first.summary == second.summary or all(
        a == b or (a != a and b != b)
        for a, b in zip(first.summary.values(), second.summary.values(), strict=True)
    )


def test_poisson_arrivals_depend_on_seed_and_replicate(small_soc):
    doc = dict(small_soc)
    doc["workload"] = [
        dict(small_soc["workload"][0], arrival={"process": "poisson", "rate_hz": 100}, count=20)
    ]
    base = simulate(parse_scenario(doc))
    again = simulate(parse_scenario(doc))
    other_seed = simulate(parse_scenario(dict(doc, seed=2)))
    other_replicate = simulate(parse_scenario(doc), replicate=1)
    arrivals = base.requests["arrival_s"].to_numpy()
    assert np.array_equal(arrivals, again.requests["arrival_s"].to_numpy())
    assert not np.array_equal(arrivals, other_seed.requests["arrival_s"].to_numpy())
    assert not np.array_equal(arrivals, other_replicate.requests["arrival_s"].to_numpy())
    assert (base.requests["seed"] == 1).all() and (other_replicate.requests["replicate"] == 1).all()
    # mean gap of 20 exponential draws at 100 Hz is near 10 ms
    assert 0.003 < np.diff(np.concatenate([[0.0], arrivals])).mean() < 0.03


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios())
def test_different_seeds_draw_different_jitter(doc):
    assume("up" in doc["links"])
    doc["links"]["up"]["jitter"] = {"dist": "uniform", "max_ms": 30}
    doc["nodes"]["phone"].pop("battery_wh", None)  # both runs carry every transfer

    def first_delay_s(seed: int) -> float:
        hops = simulate(parse_scenario(dict(doc, seed=seed))).transfers
        hops = hops[hops["kind"] == "network"].sort_values("end_s")
        assume(len(hops))
        return float(hops["arrive_s"].iloc[0] - hops["end_s"].iloc[0])

    # the first delivery on a direction is latency + its first jitter draw (nothing ahead
    # of it to wait for), and a continuous draw repeats across streams with probability 0
    assert first_delay_s(doc["seed"]) != first_delay_s(doc["seed"] + 1)
