"""The decision map of a sweep with Monte Carlo samples: each cell's winner is the one
that wins most samples, faded by the share it loses and annotated with the share it wins."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.sweep_plots import decision_map


def _table() -> pd.DataFrame:
    # cell (1, 5): A wins samples 0-2, B sample 3 -> A, P 0.75; cell (2, 5): B always
    decisions = {1: ["A", "A", "A", "B"], 2: ["B"] * 4}
    rows = []
    for x, labels in decisions.items():
        for sample, label in enumerate(labels):
            rows.append(
                {
                    "point": (x - 1) * 4 + sample,
                    "x_mbps": x,
                    "y_ms": 5,
                    "mc_sample": sample,
                    "replicate": 0,
                    "status": "ok",
                    "decision": label,
                    "latency_mean_s": 0.010 if label == "A" else 0.020,
                    "device_energy_per_inference_j": 0.001,
                }
            )
    return pd.DataFrame(rows)


def test_cells_show_the_share_of_samples_their_winner_wins():
    figure = decision_map(_table(), "x_mbps", "y_ms")
    axes = figure.axes[0]
    legend = [t.get_text() for t in figure.legends[0].texts]
    codes = axes.images[0].get_array()
    assert [legend[int(codes[0, i])] for i in range(2)] == ["A", "B"]
    texts = [t.get_text() for t in axes.texts]
    # the winner's mean latency over the samples it wins: A's 10 ms, not 12.5 ms
    assert texts == ["10 ms\n1 mJ\nP 0.75", "20 ms\n1 mJ\nP 1.00"]
    veil = axes.images[1].get_array()
    assert veil[0, 0, 3] == pytest.approx(0.25 * 0.9) and veil[0, 1, 3] == 0
    assert "share of 4 Monte Carlo samples" in axes.get_title()


def test_one_sample_draws_the_plain_map():
    table = _table()
    figure = decision_map(table[table["mc_sample"] == 0], "x_mbps", "y_ms")
    assert len(figure.axes[0].images) == 1
    assert [t.get_text() for t in figure.axes[0].texts] == ["10 ms\n1 mJ", "20 ms\n1 mJ"]


def test_a_sampled_table_file_plots_over_its_swept_parameters(tmp_path):
    """Without sweep.json the parameters are the columns between point and replicate,
    but the sample index is not one of them."""
    from analysis.kinds import make_plot
    from analysis.sources import load_source, load_sweep

    path = tmp_path / "sweep.csv"
    _table().to_csv(path, index=False)
    assert load_sweep(path).parameters == ("x_mbps", "y_ms")
    figure = make_plot("decision_map", load_source(path))
    assert figure.axes[0].texts[0].get_text().endswith("P 0.75")
