"""Early-exit models in the engine: hand-computed latencies of a request mix, and the
properties a run must keep (skipped ops never run; probability 1 at an exit ends every
request there; same seed, same exits)."""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.engine import plan_apps, simulate
from simulator.errors import PlacementError
from simulator.graph.exits import cascade_ops
from simulator.placement.exitplan import exit_plans, expected_latency_s
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXACT = 1e-12


def chain_document(probabilities=(0.5, 0.3), count: int = 1, cut: str | None = None) -> dict:
    """A phone with a 1 GFLOP/s cpu (and a cloud gpu over a 10 Mbit/s link, used when
    ``cut`` names the last op on the phone); a chain a (1 ms) -> b (2 ms) -> c (4 ms) with
    exit e1 after a (head h1: 0.5 ms) and exit e2 after b (no head)."""
    cpu = {"kind": "cpu", "peak_gflops": {"fp32": 1, "fp16": 2}, "efficiency": {"default": 1.0}}
    gpu = {"kind": "gpu", "peak_gflops": {"fp32": 1000}, "efficiency": {"default": 1.0}}
    for unit in (cpu, gpu):
        unit.update(idle_w=0.0, active_w=1.0)
    p1, p2 = probabilities
    return {
        "name": "early_exit",
        "seed": 5,
        "nodes": {
            "phone": {"role": "device", "units": {"cpu": cpu}},
            "cloud": {"role": "cloud", "units": {"gpu": gpu}},
        },
        "links": {
            "l": {
                "ends": ["phone", "cloud"],
                "latency_ms": 0,
                "bandwidth_mbps": 10,
                "reverse_bandwidth_mbps": 10,
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "a",
                        "kind": "conv",
                        "flops": 1e6,
                        "input_elems": 250,
                        "output_elems": 2500,
                    },
                    {"name": "b", "kind": "conv", "flops": 2e6, "output_elems": 500},
                    {"name": "c", "kind": "fc", "flops": 4e6, "output_elems": 10},
                ],
                "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
                "accuracy_top1": 90,
                "exits": [
                    {
                        "name": "e1",
                        "after": "a",
                        "head": [{"name": "h1", "kind": "fc", "flops": 5e5, "output_elems": 10}],
                        "accuracy_top1": 60,
                        "probability": p1,
                    },
                    {"name": "e2", "after": "b", "accuracy_top1": 75, "probability": p2},
                ],
            }
        },
        "workload": [
            {
                "app": "x",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 100},
                "count": count,
            }
        ],
        "placement": (
            {"policy": "single", "unit": "phone.cpu"}
            if cut is None
            else {"policy": "cut", "after": cut, "device": "cpu", "remote": "cloud.gpu"}
        ),
    }


#: each exit's latency on the phone alone, by hand: the unit runs a, h1, b, c in order
HAND_S = {"e1": 1e-3 + 0.5e-3, "e2": 1e-3 + 0.5e-3 + 2e-3, "final": 7.5e-3}


def test_expected_latency_of_a_request_mix_by_hand():
    scenario = parse_scenario(chain_document((0.5, 0.3)))
    oracle = CostOracle(scenario.platform)
    graph = scenario.models["m"]
    plans = exit_plans(graph, plan_apps(scenario, oracle)["x"], oracle)
    assert [p.ops for p in plans] == [("a", "h1"), ("a", "h1", "b"), ("a", "h1", "b", "c")]
    # 0.5 x 1.5 ms + 0.3 x 3.5 ms + 0.2 x 7.5 ms = 3.3 ms
    mean_s = expected_latency_s(plans, graph.shares, oracle)
    assert mean_s == pytest.approx(0.5 * 1.5e-3 + 0.3 * 3.5e-3 + 0.2 * 7.5e-3, rel=EXACT)
    assert mean_s == pytest.approx(3.3e-3, rel=EXACT)


def test_each_request_takes_its_exits_latency_and_the_mix_its_shares():
    result = simulate(parse_scenario(chain_document((0.5, 0.3), count=2000)))
    requests = result.requests
    for name, latency_s in HAND_S.items():
        mine = requests[requests["exit"] == name]
        assert mine["latency_s"].to_numpy() == pytest.approx(latency_s, rel=EXACT)
    shares = requests["exit"].value_counts(normalize=True)
    # binomial, n = 2000: 4 standard deviations at most (sd <= 0.0112)
    for name, share in {"e1": 0.5, "e2": 0.3, "final": 0.2}.items():
        assert abs(shares[name] - share) < 0.045
    # the measured mean is the realised mix of the hand latencies
    mix = sum(shares[name] * HAND_S[name] for name in HAND_S)
    assert requests["latency_s"].mean() == pytest.approx(mix, rel=1e-9)
    # per-request accuracy: the exit's
    accuracy = dict(zip(requests["exit"], requests["exit_accuracy_top1"], strict=True))
    assert accuracy == {"e1": 60.0, "e2": 75.0, "final": 90.0}


def test_same_seed_same_exits_and_another_seed_other_exits():
    doc = chain_document((0.4, 0.4), count=50)
    first = simulate(parse_scenario(doc)).requests["exit"].tolist()
    assert simulate(parse_scenario(doc)).requests["exit"].tolist() == first
    doc["seed"] = 6
    assert simulate(parse_scenario(doc)).requests["exit"].tolist() != first


def test_arrivals_do_not_move_when_a_model_gains_exits():
    doc = chain_document((0.5, 0.3), count=30)
    doc["workload"][0]["arrival"] = {"process": "poisson", "rate_hz": 5}
    with_exits = simulate(parse_scenario(doc)).requests["arrival_s"].tolist()
    del doc["models"]["m"]["exits"]
    plain = simulate(parse_scenario(doc)).requests
    assert plain["arrival_s"].tolist() == with_exits
    assert "exit" not in plain.columns  # a run without exits keeps its columns


def test_an_early_exit_sends_nothing_for_the_ops_it_skips():
    # cut after b: a, h1, b on the phone, c in the cloud
    result = simulate(parse_scenario(chain_document((0.5, 0.5), count=40, cut="b")))
    requests = result.requests.set_index("request_id")
    hops = result.transfers[result.transfers["kind"] == "network"]
    sent = hops.groupby("request_id").size()
    for rid, row in requests.iterrows():
        assert row["exit"] in ("e1", "e2")  # shares 0.5 + 0.5: nothing reaches final
        assert rid not in sent.index  # c never runs: b's output is never uploaded
    assert "cloud.gpu" not in set(result.ops["unit"])


def test_the_whole_model_uploads_once_per_request_that_reaches_final():
    result = simulate(parse_scenario(chain_document((0.0, 0.0), count=5, cut="b")))
    hops = result.transfers[result.transfers["kind"] == "network"]
    # b's 2000 B up, c's 40 B back, per request
    assert hops.groupby("request_id")["bytes"].apply(sorted).tolist() == [[40, 2000]] * 5
    latency_s = 3.5e-3 + 2000 * 8 / 10e6 + 4e6 / 1e12 + 40 * 8 / 10e6
    assert result.requests["latency_s"].to_numpy() == pytest.approx(latency_s, rel=EXACT)
    assert set(result.requests["exit"]) == {"final"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    p1=st.floats(0, 1),
    p2=st.floats(0, 1),
    cut=st.sampled_from([None, "a", "h1", "b", "c"]),
)
def test_every_request_runs_exactly_its_exits_ops(p1, p2, cut):
    if p1 + p2 > 1:
        p2 = 1 - p1
    doc = chain_document((p1, p2), count=12, cut=cut)
    scenario = parse_scenario(doc)
    graph = scenario.models["m"]
    result = simulate(scenario)
    ran = result.ops.groupby("request_id")["op"].apply(set)
    names = list(graph.exit_names)
    for rid, name in zip(result.requests["request_id"], result.requests["exit"], strict=True):
        assert ran[rid] == set(cascade_ops(graph, names.index(name)))
    # every transfer leaves an op the request ran (no cut here uploads the input itself)
    for rid, src in zip(result.transfers["request_id"], result.transfers["src_op"], strict=True):
        assert src in ran[rid]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(0, 2), cut=st.sampled_from([None, "a", "b"]))
def test_probability_one_at_exit_k_ends_every_request_there(k, cut):
    probabilities = [(1.0, 0.0), (0.0, 1.0), (0.0, 0.0)][k]
    result = simulate(parse_scenario(chain_document(probabilities, count=20, cut=cut)))
    assert set(result.requests["exit"]) == {("e1", "e2", "final")[k]}
    assert (result.requests["status"] == "completed").all()


def test_a_policy_that_rewrites_the_model_is_refused_with_exits():
    doc = copy.deepcopy(chain_document())
    doc["placement"] = {"policy": "co_execute", "units": ["phone.cpu", "cloud.gpu"]}
    with pytest.raises(PlacementError, match="rewrote model 'm'"):
        simulate(parse_scenario(doc))


def test_online_heft_is_refused_with_exits_at_validate_and_run():
    """Online HEFT reserves the whole model per request; a request running its exit's
    view used to bypass the reservations silently (its ops queued on the plain units)."""
    from simulator.placement.check import plan_problems

    doc = copy.deepcopy(chain_document(count=4))
    doc["placement"] = {"policy": "heft", "online": True}
    (problem,) = plan_problems(parse_scenario(doc))
    assert problem.path == "placement" and "online HEFT does not plan" in problem.message
    with pytest.raises(PlacementError, match="'heft' without 'online: true', or 'edgent'"):
        simulate(parse_scenario(doc))
    doc["placement"] = {"policy": "heft"}  # static HEFT keeps exits
    assert (simulate(parse_scenario(doc)).requests["status"] == "completed").all()


def test_a_request_that_falls_back_keeps_its_exit():
    sys.path.insert(0, str(Path(__file__).parent))
    from test_adaptive import adaptive_doc

    # x (0.1 s on the phone) -> y (0.1 s); exit e1 after x. Down from 1 s to 5 s: the
    # uploads of 1.0 s and 1.5 s give up at +0.2 s and the phone redoes them at their exit
    doc = adaptive_doc([0, 1.0, 1.5, 2.0, 2.5], {"outages_s": [[1.0, 5.0]]}, timeout_ms=200)
    model = doc["models"]["m"]
    model["ops"][0]["output_elems"] = 10
    model["ops"].append({"name": "y", "kind": "conv", "flops": 1e8, "output_elems": 0})
    model["edges"] = [{"src": "x", "dst": "y"}]
    model["exits"] = [{"name": "e1", "after": "x", "probability": 0.5}]
    result = simulate(parse_scenario(doc))
    requests = result.requests.sort_values("request_id")
    assert requests["fell_back"].any()
    local_s = {"e1": 0.1, "final": 0.2}
    for _, row in requests[requests["fell_back"]].iterrows():
        assert row["decision"] == "device"
        assert row["latency_s"] == pytest.approx(0.2 + local_s[row["exit"]], rel=1e-9)
    ran = result.ops.groupby("request_id")["op"].apply(set)
    for rid, name in zip(requests["request_id"], requests["exit"], strict=True):
        assert ran[rid] <= ({"x"} if name == "e1" else {"x", "y"})


def test_the_accuracy_indicator_of_a_request_mix_by_hand():
    from simulator.score.indicators import scenario_indicators

    scenario = parse_scenario(chain_document((0.5, 0.3)))
    # 0.5 x 60 + 0.3 x 75 + 0.2 x 90 = 70.5 %
    assert scenario_indicators(scenario, math.nan)["accuracy_top1"] == pytest.approx(70.5)


def test_the_scorecard_keeps_the_exits_through_techniques():
    from simulator.errors import ModelError
    from simulator.graph.exits import ExitModel, carry_exits, subgraph
    from simulator.placement.base import PlacementSpec
    from simulator.score.card import Combination, score_rows

    scenario = parse_scenario(chain_document((0.5, 0.3), count=4))
    rows = score_rows(
        scenario,
        {
            "plain": Combination(),
            "fp16": Combination(techniques=({"name": "quantize", "dtype": "fp16"},)),
        },
        {"cpu": PlacementSpec("single", {"unit": "phone.cpu"})},
    )
    # the share-weighted top-1 of the exits (0.5 x 60 + 0.3 x 75 + 0.2 x 90), not 90
    assert rows.loc[0, "accuracy_top1"] == pytest.approx(70.5)
    graph = scenario.models["m"]
    kept = carry_exits(graph, subgraph(graph, set(graph.order)), 90.0)
    assert isinstance(kept, ExitModel) and kept.exits == graph.exits
    with pytest.raises(ModelError, match="exit 'e1' names op 'h1'"):
        carry_exits(graph, subgraph(graph, {"a", "b", "c"}), 90.0)


def test_an_exit_of_share_zero_is_never_drawn_whatever_the_rounding():
    from simulator.graph.exits import choose_exit, cumulative

    cum = cumulative((0.1, 0.2, 0.7, 0.0))  # 0.1 + 0.2 + 0.7 rounds to 1.0000000000000002
    assert cum[2:] == (1.0, 1.0)
    assert [choose_exit(cum, u) for u in (0.0, 0.0999, 0.1, 0.2999, 0.31, 0.9999999999)] == [
        0,
        0,
        1,
        1,
        2,
        2,
    ]
    assert cumulative((0.0, 0.0, 1.0)) == (0.0, 0.0, 1.0)
    assert choose_exit(cumulative((0.0, 0.0, 1.0)), 0.0) == 2


def test_validate_reports_a_policy_that_rewrites_an_exit_model():
    from simulator.placement.check import plan_problems

    doc = copy.deepcopy(chain_document())
    doc["placement"] = {"policy": "co_execute", "units": ["phone.cpu", "cloud.gpu"]}
    (problem,) = plan_problems(parse_scenario(doc))
    assert problem.path == "placement" and "rewrote model 'm'" in problem.message


def test_confidence_thresholds_by_hand():
    # thresholds 0.4 and 0.5: e1 keeps 1 - 0.4 = 0.6, e2 0.4 x 0.5 = 0.2, final 0.2
    doc = chain_document((0.0, 0.0), count=2000)
    for e, threshold in zip(doc["models"]["m"]["exits"], (0.4, 0.5), strict=True):
        del e["probability"]
        e["threshold"] = threshold
    scenario = parse_scenario(doc)
    assert scenario.models["m"].shares == pytest.approx((0.6, 0.2, 0.2), rel=EXACT)
    shares = simulate(scenario).requests["exit"].value_counts(normalize=True)
    for name, share in {"e1": 0.6, "e2": 0.2, "final": 0.2}.items():
        assert abs(shares[name] - share) < 0.045  # 4 sd of a binomial share, n = 2000


def test_explain_lists_the_exits_and_the_expected_latency(tmp_path, capsys):
    import yaml

    from simulator.cli import main

    path = tmp_path / "chain.yaml"
    path.write_text(yaml.safe_dump(chain_document((0.5, 0.3), count=20)))
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    rows = out.split("exits a request may take")[1].splitlines()[2:5]
    assert [row.split()[:2] for row in rows] == [["e1", "0.5"], ["e2", "0.3"], ["final", "0.2"]]
    assert "expected latency over the exits' shares: 3.3 ms" in out
    # the predicted-vs-simulated gap is over the requests that ran the whole plan
    assert "simulated  7.5000" in out


@st.composite
def exit_chains(draw) -> tuple[dict, int]:
    """A chain of 3..7 ops with 1..3 exits at random trunk ops (some with a head), one exit
    given probability 1, split at a random op between the phone and the cloud."""
    n = draw(st.integers(3, 7))
    doc = chain_document(count=6)
    ops = [
        {"name": f"t{i}", "kind": "conv", "flops": 1e6 * (i + 1), "output_elems": 100 * (i + 1)}
        for i in range(n)
    ]
    ops[0]["input_elems"] = 250
    at = sorted(draw(st.sets(st.integers(0, n - 2), min_size=1, max_size=3)))
    exits = []
    for j, i in enumerate(at):
        exit_ = {"name": f"x{j}", "after": f"t{i}"}
        if draw(st.booleans()):
            exit_["head"] = [{"name": f"h{j}", "kind": "fc", "flops": 1e5, "output_elems": 10}]
        exits.append(exit_)
    k = draw(st.integers(0, len(exits)))  # len(exits): final
    for j, exit_ in enumerate(exits):
        exit_["probability"] = 1.0 if j == k else 0.0
    doc["models"]["m"] = {
        "ops": ops,
        "edges": [{"src": f"t{i}", "dst": f"t{i + 1}"} for i in range(n - 1)],
        "exits": exits,
    }
    cut = draw(st.sampled_from([None, *[f"t{i}" for i in range(n)]]))
    if cut is not None:
        doc["placement"] = {"policy": "cut", "after": cut, "device": "cpu", "remote": "cloud.gpu"}
    return doc, k


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=exit_chains())
def test_random_chains_end_at_their_exit_and_run_only_its_ops(case):
    doc, k = case
    scenario = parse_scenario(doc)
    graph = scenario.models["m"]
    result = simulate(scenario)
    name = graph.exit_names[k]
    assert set(result.requests["exit"]) == {name}
    assert (result.requests["status"] == "completed").all()
    expected_ops = set(cascade_ops(graph, k))
    for ran in result.ops.groupby("request_id")["op"].apply(set):
        assert ran == expected_ops
    assert set(result.transfers["src_op"].dropna()) <= expected_ops
