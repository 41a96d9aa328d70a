"""Each plot function renders from a small result table, with the expected content."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from plot_data import BANDWIDTH, BANDWIDTHS, HAND, LATENCIES, LATENCY, assert_drawn

from analysis.run_plots import energy_breakdown, gantt, utilisation
from analysis.style import label_of, save_figure, short, unit_of
from analysis.sweep_plots import decision_map, pareto_plot, sweep_curves
from simulator.errors import SocsimError


def _legend_texts(figure):
    legends = [*figure.legends, *(a.get_legend() for a in figure.axes if a.get_legend())]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def test_sweep_table_matches_the_hand_numbers(sweep_table):
    for (mbps, ms), (decision, latency_s) in HAND.items():
        rows = sweep_table[(sweep_table[BANDWIDTH] == mbps) & (sweep_table[LATENCY] == ms)]
        assert len(rows) == 2 and set(rows["decision"]) == {decision}
        assert rows["latency_mean_s"].to_numpy() == pytest.approx(latency_s, rel=1e-9)


def test_decision_map_colours_each_cell_by_its_hand_winner(sweep_table):
    figure = decision_map(sweep_table, BANDWIDTH, LATENCY)
    assert_drawn(figure)
    axes = figure.axes[0]
    assert axes.get_xlabel() == "links.uplink.bandwidth (Mbit/s)"
    assert axes.get_ylabel() == "links.uplink.latency (ms)"
    assert "winning decision" in axes.get_title()
    assert [t.get_text() for t in axes.get_xticklabels()] == ["2", "10", "100"]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["20", "500"]
    legend = _legend_texts(figure)
    assert legend == ["device", "cloud"]  # first appearance along the bandwidth axis
    grid = axes.images[0].get_array()
    for (mbps, ms), (decision, _) in HAND.items():
        code = grid[LATENCIES.index(ms), BANDWIDTHS.index(mbps)]
        assert legend[int(code)] == decision
    # every cell says the winner's latency and device energy: 0.8426 s -> "843 ms"
    texts = {t.get_text() for t in axes.texts}
    assert len(axes.texts) == len(HAND)
    assert "843 ms\n1690 mJ" in texts  # 10 Mbit/s, 20 ms: 1.69 J on the phone per inference
    assert "1000 ms\n1100 mJ" in texts  # on the phone: 1 J of compute + 0.1 J radio idle


def test_decision_map_by_policy_picks_the_best_by_metric():
    table = pd.DataFrame(
        {
            "point": [0, 1, 2, 3, 0, 1, 2, 3],
            "a_mbps": [1, 1, 2, 2] * 2,
            "b_ms": [5, 6, 5, 6] * 2,
            "placement.policy": ["heft"] * 4 + ["greedy_eft"] * 4,
            "status": "ok",
            "latency_mean_s": [0.1, 0.3, 0.1, 0.3, 0.2, 0.2, 0.2, 0.2],
            "energy_j": [1.0] * 8,
            "throughput_rps": [5, 1, 5, 1, 1, 5, 1, 5],
        }
    )
    for metric, winners in (
        ("latency_mean_s", ["heft", "greedy_eft", "heft", "greedy_eft"]),
        ("throughput_rps", ["heft", "greedy_eft", "heft", "greedy_eft"]),
        ("energy_j", ["greedy_eft"] * 4),  # a tie: the first policy in sort order
    ):
        figure = decision_map(
            table, "a_mbps", "b_ms", by="placement.policy", metric=metric, energy="energy_j"
        )
        legend = _legend_texts(figure)
        grid = figure.axes[0].images[0].get_array()
        cells = [legend[int(grid[y, x])] for x in range(2) for y in range(2)]
        assert cells == winners, metric
        assert f"best placement.policy by {label_of(metric)}" in figure.axes[0].get_title()


def test_pareto_plot_rings_the_front(sweep_table):
    figure = pareto_plot(sweep_table)
    assert_drawn(figure)
    axes = figure.axes[0]
    assert axes.get_xlabel() == "latency mean (ms)"
    assert axes.get_ylabel() == "device energy per inference (mJ)"
    assert "6 points" in axes.get_title()
    # (100 Mbit/s, 20 ms) is fastest and cheapest: the front is that one point
    assert "Pareto front (1)" in _legend_texts(figure)
    ring = axes.collections[-1].get_offsets()
    assert ring.shape == (1, 2) and ring[0].tolist() == pytest.approx([122.6, 177.96])


def test_pareto_of_a_fast_path_sweep_says_why_energy_is_missing(sweep_table):
    """A --fast sweep's energy columns are NaN in every row: say so, not "is empty"."""
    fast = sweep_table.assign(device_energy_per_inference_j=np.nan)
    with pytest.raises(SocsimError, match=r"no point has a value of device_energy_per_inference_j"):
        pareto_plot(fast)
    assert_drawn(pareto_plot(fast, y="latency_p95_s"))


def test_sweep_curves_draw_one_line_and_band_per_group(sweep_table):
    figure = sweep_curves(sweep_table, BANDWIDTH, group=LATENCY)
    assert_drawn(figure)
    axes = figure.axes[0]
    assert len(axes.lines) == len(LATENCIES) and len(axes.collections) == len(LATENCIES)
    assert axes.get_xlabel() == "links.uplink.bandwidth (Mbit/s)"
    assert axes.get_ylabel() == "latency mean (ms)"
    assert axes.get_xscale() == "log"  # 2 .. 100 Mbit/s spans 50x
    assert _legend_texts(figure) == ["20", "500"]
    fast = axes.lines[0]  # 20 ms: the hand latencies, in ms
    assert fast.get_ydata().tolist() == pytest.approx([1000.0, 842.6, 122.6])


def test_sweep_curves_band_spans_the_runs():
    table = pd.DataFrame(
        {"x_hz": [1, 1, 2, 2], "replicate": [0, 1, 0, 1], "latency_mean_s": [1, 3, 2, 2]}
    )
    axes = sweep_curves(table, "x_hz").axes[0]
    assert axes.lines[0].get_ydata().tolist() == [2000.0, 2000.0]
    band = axes.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 1000.0 and band.max() == 3000.0


def test_gantt_has_a_lane_per_unit_and_link_direction(run_result):
    figure = gantt(run_result.ops, run_result.transfers)
    assert_drawn(figure)
    axes = figure.axes[0]
    lanes = [t.get_text() for t in axes.get_yticklabels()]
    assert lanes == ["cloud.gpu", "uplink: cloud→phone", "uplink: phone→cloud"]
    assert axes.get_xlabel() == "time (ms)"
    bars = sum(len(c.get_paths()) for c in axes.collections)
    assert bars == len(run_result.ops) + len(run_result.transfers) == 9
    assert _legend_texts(figure) == ["request 0", "request 1", "request 2"]
    first = gantt(run_result.ops, run_result.transfers, requests=1)
    assert _legend_texts(first) == ["request 0"]
    assert "first 1 requests" in first.axes[0].get_title()


def test_energy_breakdown_stacks_idle_on_active(run_result):
    figure = energy_breakdown(run_result.energy)
    assert_drawn(figure)
    titles = [a.get_title() for a in figure.axes]
    assert [t.split(":")[0] for t in titles] == ["device", "cloud"]
    for axes, role in zip(figure.axes, ["device", "cloud"], strict=True):
        mine = run_result.energy[run_result.energy["role"] == role]
        unit, scale = ("J", 1.0) if mine["energy_j"].max() >= 1 else ("mJ", 1e3)
        assert axes.get_ylabel() == f"energy ({unit})"
        heights = sum(p.get_height() for p in axes.patches)
        assert heights == pytest.approx(mine["energy_j"].sum() * scale)
    assert "window" in figure.get_suptitle() and _legend_texts(figure) == ["active", "idle"]


def test_utilisation_bars_are_the_units_table(run_result):
    figure = utilisation(run_result.units)
    assert_drawn(figure)
    axes = figure.axes[0]
    widths = [p.get_width() for p in axes.patches]
    assert widths == pytest.approx((run_result.units["utilisation"] * 100).tolist())
    assert axes.get_xlabel() == "utilisation (%)"
    assert _legend_texts(figure) == ["device", "cloud"]


def test_no_pyplot_state_is_left_behind(sweep_table, run_result):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    decision_map(sweep_table, BANDWIDTH, LATENCY)
    gantt(run_result.ops, run_result.transfers)
    assert plt.get_fignums() == before


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_save_figure_writes_each_format(sweep_table, tmp_path, fmt):
    path = save_figure(pareto_plot(sweep_table), tmp_path / f"p.{fmt}")
    head = path.read_bytes()[:8]
    assert {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt] in head


def test_bad_input_names_what_was_expected(sweep_table, run_result, tmp_path):
    with pytest.raises(SocsimError, match=r"no column 'links.x_ms'; available: point, "):
        decision_map(sweep_table, BANDWIDTH, "links.x_ms")
    with pytest.raises(SocsimError, match=r"energy table is empty"):
        energy_breakdown(run_result.energy.iloc[0:0])
    with pytest.raises(SocsimError, match=r"rows with status 'ok'\) is empty"):
        pareto_plot(sweep_table.assign(status="error"))
    with pytest.raises(SocsimError, match=r"no column 'utilisation'; available: node, unit"):
        utilisation(run_result.units.drop(columns="utilisation"))
    with pytest.raises(SocsimError, match=r"requests must be a whole number >= 1, got 0"):
        gantt(run_result.ops, run_result.transfers, requests=0)
    with pytest.raises(SocsimError, match=r"expected one of \.png, \.svg, \.pdf"):
        save_figure(pareto_plot(sweep_table), tmp_path / "p.jpg")


@pytest.mark.parametrize(
    ("column", "label", "unit"),
    [
        ("links.uplink.bandwidth_mbps", "links.uplink.bandwidth (Mbit/s)", ("Mbit/s", 1.0)),
        ("latency_p95_s", "latency p95 (ms)", ("ms", 1e3)),
        ("device_energy_per_inference_j", "device energy per inference (mJ)", ("mJ", 1e3)),
        ("inferences_per_j", "inferences (1/J)", ("1/J", 1.0)),
        ("deadline_met_rate", "deadline met rate (%)", ("%", 100.0)),
        ("workload[0].arrival.rate_hz", "workload[0].arrival.rate (Hz)", ("Hz", 1.0)),
        ("placement.policy", "placement.policy", ("", 1.0)),
    ],
)
def test_labels_carry_units(column, label, unit):
    assert label_of(column) == label
    assert unit_of(column) == unit


def test_short_numbers():
    assert [short(v) for v in (842.6, 14.75, 0.1234, 1689.96, 2e6, np.nan)] == [
        "843",
        "14.8",
        "0.123",
        "1690",
        "2e+06",
        "n/a",
    ]
