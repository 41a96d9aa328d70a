"""co_execute (intra-layer splitting: CoDL, μLayer, MoDNN): hand answers and properties."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simulator.placement.coexec  # noqa: F401  (registers co_execute)
from simulator.engine import plan_apps, simulate
from simulator.errors import PlacementError, ScenarioError
from simulator.hardware.cost import compute_time_s
from simulator.placement.balance import balanced_ratios, water_fill
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "scenarios" / "examples"
EXACT = 1e-12


# -- the balancing formulas ---------------------------------------------------------------
def test_balanced_ratio_two_speeds_no_dispatch():
    # 1 GFLOP op on units of 1 and 3 GFLOP/s: b = 1 s and 1/3 s; T = 1 / (1 + 3) = 0.25 s
    ratios, finish = balanced_ratios([0.0, 0.0], [1.0, 1 / 3])
    assert ratios == pytest.approx([0.25, 0.75], rel=EXACT)
    assert finish == pytest.approx(0.25, rel=EXACT)


def test_balanced_ratio_with_dispatch():
    # the 3 GFLOP/s unit pays 0.1 s dispatch: T = (1 + 0.1 * 3) / (1 + 3) = 0.325 s,
    # r = 0.325 / 1 = 0.325 and (0.325 - 0.1) * 3 = 0.675
    ratios, finish = balanced_ratios([0.0, 0.1], [1.0, 1 / 3])
    assert ratios == pytest.approx([0.325, 0.675], rel=EXACT)
    assert finish == pytest.approx(0.325, rel=EXACT)
    assert sum(ratios) == pytest.approx(1.0, rel=EXACT)


def test_balanced_ratio_drops_a_unit_that_cannot_help():
    # fixed cost 2 s on the fast unit: first solve T = (1 + 6) / 4 = 1.75 < 2 -> r < 0,
    # dropped; alone the slow unit takes T = 1 s
    ratios, finish = balanced_ratios([0.0, 2.0], [1.0, 1 / 3])
    assert ratios == [1.0, 0.0]
    assert finish == 1.0


def test_water_fill_equals_the_closed_form_for_lines():
    for fixed, slope in [([0.0, 0.0], [1.0, 1 / 3]), ([0.0, 0.1], [1.0, 1 / 3])]:
        got, t = water_fill([[(a, b)] for a, b in zip(fixed, slope, strict=True)])
        want, t_want = balanced_ratios(fixed, slope)
        assert got == pytest.approx(want, rel=EXACT)
        assert t == pytest.approx(t_want, rel=EXACT)


def test_water_fill_with_a_memory_bound_piece():
    # unit 0: max(r, 0.2 + 0.5 r); unit 1: 0.1 + r / 3. At T = 0.34 unit 0's binding
    # line is 0.2 + 0.5 r -> r0 = 0.28; unit 1: (0.34 - 0.1) * 3 = 0.72; 0.28 + 0.72 = 1
    ratios, finish = water_fill([[(0.0, 1.0), (0.2, 0.5)], [(0.1, 1 / 3)]])
    assert ratios == pytest.approx([0.28, 0.72], rel=1e-12)
    assert finish == pytest.approx(0.34, rel=1e-12)


# -- scenarios with hand answers ----------------------------------------------------------
def soc(
    cpu_dispatch_us=0.0,
    sync_us=0.0,
    shared_gb_s=None,
    ops=None,
    edges=None,
    placement=None,
) -> dict:
    """A phone with a 1 GFLOP/s cpu and a 3 GFLOP/s gpu; by default one 1 GFLOP conv."""
    node = {
        "role": "device",
        "sync_us": sync_us,
        "units": {
            "cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}, "dispatch_us": cpu_dispatch_us},
            "gpu": {"kind": "gpu", "peak_gflops": {"fp32": 3}},
        },
    }
    if shared_gb_s is not None:
        node["shared_memory_bandwidth_gb_s"] = shared_gb_s
    return {
        "name": "coexec_soc",
        "seed": 1,
        "nodes": {"phone": node},
        "models": {
            "net": {
                "ops": ops or [{"name": "big", "kind": "conv", "flops": 1e9, "output_elems": 1000}],
                "edges": edges or [],
            }
        },
        "workload": [
            {
                "app": "app",
                "model": "net",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 10_000},
                "count": 1,
            }
        ],
        "placement": placement or {"policy": "co_execute", "units": ["gpu", "cpu"]},
    }


def by_op(rows) -> dict:
    """A ``split`` / ``kept`` note as op -> row."""
    return {row["op"]: row for row in rows}


def run(document):
    scenario = parse_scenario(document)
    plan = plan_apps(scenario)["app"]
    result = simulate(scenario)
    return plan, result.requests["latency_s"].iloc[0]


def test_cpu_gpu_split_without_fixed_costs():
    plan, latency = run(soc())
    notes = plan.placement.notes
    assert by_op(notes["split"])["big"]["ratios"] == pytest.approx(
        {"phone.gpu": 0.75, "phone.cpu": 0.25}, rel=EXACT
    )
    # both parts take 0.25 s; no sync, copy or dispatch; the merge costs nothing
    assert latency == pytest.approx(0.25, rel=EXACT)
    assert notes["home_latency_s"] == pytest.approx(1 / 3, rel=EXACT)
    # the sum-of-throughputs bound is reached: (1 + 3) / 3
    assert notes["predicted_speedup"] == pytest.approx(4 / 3, rel=EXACT)
    assert dict(zip(plan.ops, plan.units, strict=True)) == {
        "big#0": "phone.gpu",
        "big#1": "phone.cpu",
        "big#merge": "phone.gpu",
    }


def test_cpu_gpu_split_with_dispatch():
    # cpu dispatch 0.1 s: a = (0, 0.1), b = (1/3, 1): T = (1 + 0.1) / (3 + 1) = 0.275 s,
    # r_gpu = 0.275 * 3 = 0.825, r_cpu = 0.275 - 0.1 = 0.175
    plan, latency = run(soc(cpu_dispatch_us=100_000))
    ratios = by_op(plan.placement.notes["split"])["big"]["ratios"]
    assert ratios == pytest.approx({"phone.gpu": 0.825, "phone.cpu": 0.175}, rel=EXACT)
    assert latency == pytest.approx(0.275, rel=EXACT)


def test_cpu_gpu_split_pays_sync_and_copy_both_ways():
    # pre (free, on the gpu home) -> big. The cpu part waits for pre's 4000 B (sync 10 ms
    # + 4000 B / 1 GB/s) and returns r x 8000 B (sync 10 ms + bytes / 1 GB/s):
    #   cpu: a = 0.010004 + 0.01, b = 1 + 8e-6;   gpu: a = 0, b = 1/3
    ops = [
        {"name": "pre", "kind": "activation", "flops": 0, "output_elems": 1000},
        {"name": "big", "kind": "conv", "flops": 1e9, "input_elems": 1000, "output_elems": 2000},
    ]
    doc = soc(sync_us=10_000, shared_gb_s=1, ops=ops, edges=[{"src": "pre", "dst": "big"}])
    plan, latency = run(doc)
    a_cpu, b_cpu = 0.010004 + 0.01, 1 + 8000 / 1e9
    finish = (1 + a_cpu / b_cpu) / (3 + 1 / b_cpu)
    r_cpu = (finish - a_cpu) / b_cpu
    ratios = by_op(plan.placement.notes["split"])["big"]["ratios"]
    assert ratios["phone.cpu"] == pytest.approx(r_cpu, rel=EXACT)
    assert ratios["phone.gpu"] == pytest.approx(finish * 3, rel=EXACT)
    # the real part returns whole elements (under 4 B off r x 8000 B): within 4 ns
    assert latency == pytest.approx(finish, abs=5e-9)


def test_auto_keeps_an_op_when_the_sync_costs_more_than_it_saves():
    # sync 1 s: the cpu would need T >= 1 s (it returns its part through a sync); alone
    # the gpu takes 1/3 s, so balancing keeps everything on the gpu
    plan, latency = run(soc(sync_us=1_000_000))
    notes = plan.placement.notes
    assert notes["split"] == ()
    assert "big" in by_op(notes["kept"])
    assert set(plan.units) == {"phone.gpu"}
    assert latency == pytest.approx(1 / 3, rel=EXACT)


def test_always_splits_even_when_slower_with_fixed_ratios():
    # fixed 50/50: the cpu half takes 0.5 s > 1/3 s on the gpu alone
    placement = {"policy": "co_execute", "units": ["gpu", "cpu"], "ratio": [0.5, 0.5]}
    plan, latency = run(soc(placement={**placement, "mode": "auto"}))
    assert latency == pytest.approx(1 / 3, rel=EXACT)
    assert "not faster" in by_op(plan.placement.notes["kept"])["big"]["reason"]
    plan, latency = run(soc(placement={**placement, "mode": "always"}))
    assert latency == pytest.approx(0.5, rel=EXACT)
    assert by_op(plan.placement.notes["split"])["big"]["ratios"] == {
        "phone.gpu": 0.5,
        "phone.cpu": 0.5,
    }


def test_kinds_limit_what_is_split():
    placement = {"policy": "co_execute", "units": ["gpu", "cpu"], "kinds": ["fc"]}
    plan, latency = run(soc(placement=placement))
    assert plan.placement.notes["split"] == ()
    assert latency == pytest.approx(1 / 3, rel=EXACT)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"units": ["gpu", "gpu"]}, "listed twice"),
        ({"units": ["gpu", "cpu"], "exclude": ["cpu"]}, "both 'units' and 'exclude'"),
        ({"units": ["gpu", "cpu"], "ratio": [0.5, 0.2]}, "sum to 1"),
        ({"units": ["gpu", "cpu"], "ratio": [1.0, 0.0]}, "at least two units"),
        ({"units": ["gpu", "cpu"], "ratio": [0.2, 0.3, 0.5]}, "one value per unit"),
        ({"units": ["gpu", "cpu"], "objective": "device_energy"}, "latency only"),
    ],
)
def test_bad_options_are_placement_errors(options, message):
    with pytest.raises(PlacementError, match=message):
        run(soc(placement={"policy": "co_execute", **options}))


def test_bad_yaml_options_are_scenario_errors():
    with pytest.raises(ScenarioError, match="balanced"):
        parse_scenario(
            soc(placement={"policy": "co_execute", "units": ["gpu", "cpu"], "ratio": "x"})
        )
    with pytest.raises(ScenarioError, match="unknown unit"):
        parse_scenario(soc(placement={"policy": "co_execute", "units": ["gpu", "npu"]}))
    with pytest.raises(ScenarioError, match="at least 2"):
        parse_scenario(soc(placement={"policy": "co_execute", "units": ["gpu"]}))


def test_home_that_cannot_run_an_unsplit_op_is_an_error():
    doc = soc(
        ops=[
            {"name": "big", "kind": "conv", "flops": 1e9, "output_elems": 10},
            {"name": "head", "kind": "softmax", "flops": 10, "input_elems": 10},
        ],
        edges=[{"src": "big", "dst": "head"}],
    )
    doc["nodes"]["phone"]["units"]["gpu"]["supports"] = ["conv", "concat"]
    with pytest.raises(PlacementError, match="cannot run it"):
        run(doc)


# -- across devices (MoDNN) ---------------------------------------------------------------
def two_phones(latency_ms: float, axis: str = "channels") -> dict:
    """A phone and a peer of equal speed (1 GFLOP/s) over a 100 Mbit/s link."""
    unit = {"kind": "cpu", "peak_gflops": {"fp32": 1}}
    doc = soc(
        ops=[
            {"name": "big", "kind": "conv", "flops": 1e9, "input_elems": 1000, "output_elems": 1000}
        ],
        placement={"policy": "co_execute", "units": ["phone.cpu", "peer.cpu"], "axis": axis},
    )
    doc["nodes"] = {"phone": {"units": {"cpu": unit}}, "peer": {"units": {"cpu": unit}}}
    doc["links"] = {
        "d2d": {"ends": ["phone", "peer"], "latency_ms": latency_ms, "bandwidth_mbps": 100}
    }
    return doc


def test_two_phones_split_by_hand():
    # the peer receives the 4000 B request input (latency L + 320 us) and returns r x 4000 B
    # (L + r x 320 us): a_peer = 2L + 320 us, b_peer = 1 + 320 us; home: a = 0, b = 1
    latency_s = 0.005
    plan, latency = run(two_phones(latency_ms=5))
    a_peer, b_peer = 2 * latency_s + 320e-6, 1 + 320e-6
    finish = (1 + a_peer / b_peer) / (1 + 1 / b_peer)
    ratios = by_op(plan.placement.notes["split"])["big"]["ratios"]
    assert ratios["phone.cpu"] == pytest.approx(finish, rel=EXACT)
    assert latency == pytest.approx(finish, abs=3.2e-7)  # whole elements: < 4 B x 80 ns/B
    assert plan.placement.label(CostOracle(parse_scenario(two_phones(5)).platform)) == "mixed"


def test_two_phones_stop_splitting_when_the_link_is_slow_to_answer():
    # 2L > 1 s: the peer could not finish any share before the home finishes all of it
    plan, latency = run(two_phones(latency_ms=600))
    assert plan.placement.notes["split"] == ()
    assert latency == pytest.approx(1.0, rel=EXACT)


# -- properties ---------------------------------------------------------------------------
def unit_doc(draw, kind):
    peak = draw(st.floats(0.5, 50))
    bw = draw(st.one_of(st.none(), st.floats(1, 100)))
    unit = {
        "kind": kind,
        "cores": draw(st.integers(1, 4)),
        "peak_gflops": {"fp32": peak},
        "dispatch_us": draw(st.floats(0, 500)),
    }
    if bw is not None:
        unit["memory_bandwidth_gb_s"] = bw
    return unit


@st.composite
def soc_with_conv_chain(draw, max_ops: int = 3):
    """Random 2-3 unit SoC and a chain of convs; unit 0 is the home."""
    kinds = ["cpu", "gpu", "dsp"][: draw(st.integers(2, 3))]
    units = {f"u{i}": unit_doc(draw, k) for i, k in enumerate(kinds)}
    n = draw(st.integers(1, max_ops))
    ops = [
        {
            "name": f"c{j}",
            "kind": "conv",
            "flops": draw(st.floats(1e6, 1e10)),
            "params": draw(st.integers(0, 10**6)),
            "input_elems": draw(st.integers(0, 10**6)),
            "output_elems": draw(st.integers(1, 10**6)),
        }
        for j in range(n)
    ]
    doc = soc(
        ops=ops,
        edges=[{"src": f"c{j}", "dst": f"c{j + 1}"} for j in range(n - 1)],
        shared_gb_s=draw(st.floats(1, 50)),
        sync_us=draw(st.floats(0, 300)),
        placement={
            "policy": "co_execute",
            "units": list(units),
            "mode": "always",
            "axis": draw(st.sampled_from(["channels", "rows"])),
        },
    )
    doc["nodes"]["phone"]["units"] = units
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soc_with_conv_chain(max_ops=1))
def test_split_never_beats_the_sum_of_the_units_throughputs(doc):
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario)["app"]
    op = scenario.models["net"].op("c0")
    # units' FLOP/s on this op (peak x efficiency x Amdahl): no split can beat their sum
    rate = sum(
        op.flops / compute_time_s(op, scenario.platform.unit(u)) for u in oracle.platform.unit_ids
    )
    bound = op.flops / rate
    split = plan.placement.notes["split"]
    if split:
        assert by_op(split)["c0"]["split_s"] >= bound * (1 - 1e-12)
    result = simulate(scenario)
    latency = result.requests["latency_s"].iloc[0]
    assert latency >= bound * (1 - 1e-12)
    predicted = estimate(plan, oracle).latency_s
    stall_s = result.ops["memory_stall_s"].sum()
    if not stall_s:  # the estimate leaves shared DRAM out (docs/design.md)
        assert latency == pytest.approx(predicted, rel=1e-12)
    else:  # the parts met on the node's DRAM: later, by at most their stalls
        assert predicted * (1 - 1e-12) <= latency <= (predicted + stall_s) * (1 + 1e-12)


def predicted_speedup(doc) -> float:
    notes = plan_apps(parse_scenario(doc))["app"].placement.notes
    return notes["predicted_speedup"]


def make_home_fastest(doc) -> dict:
    """Give the home (u0) the largest peak and bandwidth and the smallest dispatch."""
    units = doc["nodes"]["phone"]["units"]
    home = units["u0"]
    others = [u for name, u in units.items() if name != "u0"]
    home["cores"] = max(u["cores"] for u in units.values())
    home["peak_gflops"] = {"fp32": max(u["peak_gflops"]["fp32"] for u in units.values())}
    home["dispatch_us"] = min(u["dispatch_us"] for u in units.values())
    if any("memory_bandwidth_gb_s" not in u for u in others):
        home.pop("memory_bandwidth_gb_s", None)
    elif "memory_bandwidth_gb_s" in home:
        home["memory_bandwidth_gb_s"] = max(u["memory_bandwidth_gb_s"] for u in units.values())
    return doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    doc=soc_with_conv_chain(),
    syncs=st.lists(st.floats(0, 5000), min_size=2, max_size=5).map(sorted),
)
def test_speedup_is_monotone_non_increasing_in_sync_cost(doc, syncs):
    doc = make_home_fastest(doc)
    doc["placement"]["mode"] = "auto"
    speedups = []
    for sync in syncs:
        variant = copy.deepcopy(doc)
        variant["nodes"]["phone"]["sync_us"] = sync
        speedups.append(predicted_speedup(variant))
    for before, after in itertools.pairwise(speedups):
        assert after <= before * (1 + 1e-9)
    assert all(s >= 1 - 1e-9 for s in speedups)  # auto never predicts a slowdown


@settings(max_examples=30, deadline=None)
@given(
    peer_gflops=st.floats(0.1, 1.0),
    axis=st.sampled_from(["channels", "rows"]),
    latencies=st.lists(st.floats(0, 200), min_size=2, max_size=5).map(sorted),
)
def test_speedup_is_monotone_non_increasing_in_link_latency(peer_gflops, axis, latencies):
    speedups = []
    for latency_ms in latencies:
        doc = two_phones(latency_ms, axis=axis)
        doc["nodes"]["peer"]["units"]["cpu"]["peak_gflops"]["fp32"] = peer_gflops
        speedups.append(predicted_speedup(doc))
    for before, after in itertools.pairwise(speedups):
        assert after <= before * (1 + 1e-9)


# -- engine == estimate and the shipped scenarios -------------------------------------------
def engine_and_estimate(scenario):
    plans = plan_apps(scenario)
    app, plan = next(iter(plans.items()))
    predicted = estimate(plan, CostOracle(scenario.platform)).latency_s
    result = simulate(scenario)
    measured = result.requests.loc[result.requests["app"] == app, "latency_s"].iloc[0]
    return plan, predicted, measured, result.ops["memory_stall_s"].sum()


def assert_engine_matches_estimate(predicted, measured, stall_s):
    """Equal without DRAM stalls (the estimate does not model shared DRAM); with them, the
    engine is later by at most the stalls (op ends are 1-Lipschitz in op times)."""
    if not stall_s:
        assert measured == pytest.approx(predicted, rel=1e-12)
    else:
        assert predicted * (1 - 1e-12) <= measured <= predicted + stall_s * (1 + 1e-9)


def one_request(path: Path) -> dict:
    import yaml

    document = yaml.safe_load(path.read_text())
    document["workload"] = document["workload"][:1]
    document["workload"][0]["count"] = 1
    return document


@pytest.mark.parametrize("name", ["codl_cpu_gpu_vgg16.yaml", "modnn_phones_vgg16.yaml"])
def test_engine_equals_estimate_for_one_request(name):
    scenario = parse_scenario(one_request(EXAMPLES / name), base_dir=EXAMPLES)
    plan, predicted, measured, stall_s = engine_and_estimate(scenario)
    assert plan.placement.notes["split"]  # something was split
    assert_engine_matches_estimate(predicted, measured, stall_s)
    # CPU+GPU parts share the phone's DRAM (fc6, fc7 stall); MoDNN's phones do not
    assert (stall_s > 0) == name.startswith("codl")


def test_engine_equals_estimate_on_a_dag_model():
    document = one_request(EXAMPLES / "codl_cpu_gpu_vgg16.yaml")
    document["models"] = {"net": {"zoo": "resnet18", "dtype": "fp32"}}
    document["workload"][0]["model"] = "net"
    document["placement"] = {"policy": "co_execute", "units": ["gpu", "cpu_big"], "mode": "always"}
    scenario = parse_scenario(document, base_dir=EXAMPLES)
    plan, predicted, measured, stall_s = engine_and_estimate(scenario)
    assert any(op.endswith("#merge") for op in plan.ops)
    assert_engine_matches_estimate(predicted, measured, stall_s)


def test_shipped_scenarios_load_and_run():
    for name in ("codl_cpu_gpu_vgg16.yaml", "modnn_phones_vgg16.yaml"):
        result = simulate(load_scenario(EXAMPLES / name))
        assert (result.requests["status"] == "completed").all()


def test_codl_gains_at_most_about_twice_the_best_single_unit():
    document = one_request(EXAMPLES / "codl_cpu_gpu_vgg16.yaml")
    _, _, together, _ = engine_and_estimate(parse_scenario(document, base_dir=EXAMPLES))
    alone = []
    for unit in ("gpu", "cpu_big"):
        document["placement"] = {"policy": "single", "unit": unit}
        alone.append(engine_and_estimate(parse_scenario(document, base_dir=EXAMPLES))[2])
    assert 1.0 <= min(alone) / together <= 2.0


def test_modnn_speedup_falls_as_link_latency_rises():
    document = one_request(EXAMPLES / "modnn_phones_vgg16.yaml")
    speedups = []
    for latency_ms in (1, 10, 30, 100):
        variant = copy.deepcopy(document)
        for link in variant["links"].values():
            link["latency_ms"] = latency_ms
        speedups.append(predicted_speedup_of(parse_scenario(variant, base_dir=EXAMPLES)))
    assert speedups[0] > 1.2
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(speedups))
    assert speedups[-1] == pytest.approx(1.0, abs=0.02)


def predicted_speedup_of(scenario) -> float:
    plan = next(iter(plan_apps(scenario).values()))
    return plan.placement.notes["predicted_speedup"]


def test_an_unbounded_bandwidth_part_pulls_nothing_from_the_dram_bound():
    # cpu 1 GFLOP/s at 1 GB/s, gpu 3 GFLOP/s of unbounded bandwidth, node DRAM 1 GB/s; a
    # 1 GFLOP conv with 400 MB of fp32 weights splits 1:3 by channels (compute-bound on
    # both: the cpu's 100 MB take 0.1 s < its 0.25 s). The engine counts no DRAM bytes for
    # the gpu part, so the split's bound is not 400 MB / 1 GB/s = 0.4 s: both take 0.25 s
    doc = soc(
        ops=[
            {"name": "big", "kind": "conv", "flops": 1e9, "params": 100_000_000},
        ],
        placement={"policy": "co_execute", "units": ["gpu", "cpu"], "mode": "always"},
    )
    doc["nodes"]["phone"]["dram_bandwidth_gb_s"] = 1
    doc["nodes"]["phone"]["units"]["cpu"]["memory_bandwidth_gb_s"] = 1
    doc["nodes"]["phone"]["units"]["gpu"]["memory_bandwidth_gb_s"] = "unbounded"
    plan, latency = run(doc)
    split = by_op(plan.placement.notes["split"])["big"]
    assert split["ratios"] == pytest.approx({"phone.gpu": 0.75, "phone.cpu": 0.25}, rel=EXACT)
    assert split["split_s"] == pytest.approx(0.25, rel=EXACT)
    assert latency == pytest.approx(0.25, rel=EXACT)  # what the engine runs
