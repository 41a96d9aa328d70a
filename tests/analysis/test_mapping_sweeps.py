"""Issue 21 item 8: sweeps whose parameter takes mappings, through `socsim sweep`, `plot`
and `report`, and the plot faults the issue lists (each reproduced by its command first).

The sweep is the phone/cloud scenario of tests/conftest.py over uplink bandwidth ×
one-way latency × two placements given as mappings. Hand numbers (plot_data's
docstring): the phone runs the 1 GFLOP op in 1 s; offloading costs 8 Mbit at the
uplink bandwidth, 2 × the latency, 1 ms on the cloud GPU and 1.6 ms back: 842.6 ms at
10 Mbit/s and 20 ms, 122.6 ms at 100 Mbit/s and 20 ms, 1802.6 and 1082.6 ms at 500 ms.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import phone_cloud_document
from matplotlib.collections import PolyCollection

from analysis.kinds import decision_map_views, make_plot
from analysis.report import build_report
from analysis.run_plots import energy_breakdown
from analysis.sources import load_source, load_sweep
from analysis.style import figure_bytes
from analysis.sweep_plots import decision_map, pareto_plot, sweep_curves
from simulator.cli import main
from simulator.output.cells import cell_value, typed_cell

BANDWIDTH = "links.uplink.bandwidth_mbps"
LATENCY = "links.uplink.latency_ms"
OFFLOAD = "{node: cloud, policy: offload}"
PHONE = "{policy: single, unit: cpu}"


@pytest.fixture(scope="module")
def mapping_sweep(tmp_path_factory):
    """`socsim sweep` of bandwidth × latency × placement (mappings), serial."""
    folder = tmp_path_factory.mktemp("mapping_sweep")
    document = copy.deepcopy(phone_cloud_document())
    document["sweep"] = {
        "executor": {"name": "serial"},
        "parameters": {
            BANDWIDTH: [10, 100],
            LATENCY: [20, 500],
            # key order as a user writes them; the cell sorts them
            "placement": [
                {"policy": "offload", "node": "cloud"},
                {"policy": "single", "unit": "cpu"},
            ],
        },
    }
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    out = folder / "out"
    assert main(["sweep", str(path), "-o", str(out), "-q"]) == 0
    return out


def test_cell_value_is_one_canonical_text():
    assert cell_value({"policy": "offload", "node": "cloud"}) == OFFLOAD
    assert cell_value({"node": "cloud", "policy": "offload"}) == OFFLOAD
    assert cell_value([1, 2.5, "a"]) == "[1, 2.5, a]"
    assert cell_value(np.array([1, 2])) == "[1, 2]"  # a Parquet list cell
    assert cell_value({"a": np.int64(3), "b": "yes"}) == "{a: 3, b: 'yes'}"  # reads back as text
    assert yaml.safe_load(cell_value({"a": np.int64(3), "b": "yes"})) == {"a": 3, "b": "yes"}
    assert cell_value(5) == 5 and cell_value("x") == "x"
    assert typed_cell("{policy: offload,  node: cloud}") == OFFLOAD
    assert typed_cell("{not yaml: [") == "{not yaml: ["


def test_csv_and_parquet_hold_the_same_text(mapping_sweep):
    csv = pd.read_csv(mapping_sweep / "sweep.csv")
    parquet = pd.read_parquet(mapping_sweep / "sweep.parquet")
    assert list(csv["placement"]) == list(parquet["placement"]) == [OFFLOAD, PHONE] * 4
    assert list(load_sweep(mapping_sweep).table["placement"]) == list(csv["placement"])


def _cell_latencies_ms(figure) -> list[str]:
    return sorted(t.get_text().split("\n")[0] for t in figure.axes[0].texts)


def test_decision_map_by_a_mapping_parameter(mapping_sweep, tmp_path, capsys):
    # the exact command of the issue: it ended in TypeError: unhashable type: 'dict'
    out = tmp_path / "map.png"
    argv = ["plot", "decision_map", str(mapping_sweep), "-o", str(out), "--by", "placement"]
    assert main(argv) == 0 and out.stat().st_size > 1000
    figure = make_plot("decision_map", load_source(mapping_sweep), by="placement")
    # offload wins at 20 ms (842.6, 122.6 ms), the phone's 1 s at 500 ms (1802.6, 1082.6)
    assert _cell_latencies_ms(figure) == ["1000 ms", "1000 ms", "123 ms", "843 ms"]
    labels = {t.get_text() for t in figure.legends[0].get_texts()}
    assert labels == {OFFLOAD, PHONE}
    # without --by, the third parameter is named, with the option as it is spelt
    assert main(["plot", "decision_map", str(mapping_sweep), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "placement also varies" in err and "(--by PATH)" in err and "by=PATH" not in err


@pytest.mark.parametrize("typed", [OFFLOAD, "{policy: offload, node: cloud}"])
def test_where_a_mapping_in_any_key_order(mapping_sweep, tmp_path, typed):
    out = tmp_path / "map.png"
    argv = ["plot", "decision_map", str(mapping_sweep), "-o", str(out), "--where"]
    assert main([*argv, f"placement={typed}"]) == 0
    sweep = load_sweep(mapping_sweep).where({"placement": typed})
    assert list(sweep.table["point"]) == [0, 2, 4, 6]


def test_curves_over_and_by_a_mapping_parameter(mapping_sweep, tmp_path):
    assert main(["plot", "curves", str(mapping_sweep), "-o", str(tmp_path / "a.png")]) == 0
    argv = ["plot", "curves", str(mapping_sweep), "-o", str(tmp_path / "b.png")]
    assert main([*argv, "--x", "placement", "--group", BANDWIDTH]) == 0
    figure = make_plot("curves", load_source(mapping_sweep), x="placement")
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert ticks == [OFFLOAD, PHONE]


def test_plots_take_a_table_with_mapping_cells(mapping_sweep):
    """A table from the Python API may hold the dicts themselves: the plots make them
    the same text as the files."""
    table = load_sweep(mapping_sweep).table.copy()
    table["placement"] = table["placement"].map(yaml.safe_load)
    assert isinstance(table["placement"].iloc[0], dict)
    figure = sweep_curves(table, "placement", group=[BANDWIDTH, LATENCY])
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == [OFFLOAD, PHONE]
    figure = decision_map(table, BANDWIDTH, LATENCY, by="placement")
    assert _cell_latencies_ms(figure) == ["1000 ms", "1000 ms", "123 ms", "843 ms"]


def test_report_draws_one_map_per_third_parameter_value_and_says_so(mapping_sweep, tmp_path):
    # the exact command of the issue: TypeError; and before, the map was left out silently
    out = tmp_path / "report.html"
    assert main(["report", str(mapping_sweep), "-o", str(out)]) == 0
    page = out.read_text()
    assert (
        f"placement also varies inside the cells of {BANDWIDTH} × {LATENCY}: "
        "one decision map per value of placement" in page
    )
    assert 'id="plot-decision_map-1"' in page and 'id="plot-decision_map-2"' in page
    assert f"where placement={OFFLOAD}" in page and f"where placement={PHONE}" in page
    views, _ = decision_map_views(load_source(mapping_sweep))
    # with offload fixed: 843 and 123 ms at 20 ms, 1803 and 1083 ms at 500 ms
    figure = make_plot("decision_map", views[0].source, x=views[0].x, y=views[0].y)
    assert _cell_latencies_ms(figure) == ["1083 ms", "123 ms", "1803 ms", "843 ms"]


def test_report_of_a_one_parameter_sweep_says_why_there_is_no_map(mapping_sweep, tmp_path):
    sweep = load_sweep(mapping_sweep)
    table = sweep.table[(sweep.table[BANDWIDTH] == 10) & (sweep.table[LATENCY] == 20)]
    table = table.drop(columns=[BANDWIDTH, LATENCY])
    table.to_csv(tmp_path / "sweep.csv", index=False)
    page = build_report(tmp_path / "sweep.csv")
    assert "no decision map: it needs two swept parameters; this sweep has placement" in page


def _titles(figure):
    texts = [axes.title for axes in figure.axes if axes.get_title()]
    return texts + ([figure._suptitle] if figure._suptitle is not None else [])


@pytest.mark.parametrize("kind", ["gantt", "energy", "utilisation"])
def test_run_figure_titles_fit_the_figure(kind, run_dir):
    figure = make_plot(kind, load_source(run_dir))
    figure.canvas.draw()
    for text in _titles(figure):
        box = text.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width, text.get_text()


def test_energy_title_is_whole_and_in_seconds_for_a_long_window(run_result):
    # the phone/cloud run: a 6-inch figure under an 80-character title, cut on both sides
    figure = energy_breakdown(run_result.energy)
    figure.canvas.draw()
    title = figure._suptitle
    box = title.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= figure.bbox.width
    # wrapped, not cut: every word is there
    whole = " ".join(title.get_text().split())
    assert whole.startswith("energy by component in the window 0–")
    assert whole.endswith("ms (dark: active, light: idle)")
    energy = run_result.energy.assign(window_end_s=31.44)
    assert "0–31.44 s" in energy_breakdown(energy)._suptitle.get_text()


@pytest.mark.parametrize("kind", ["decision_map", "pareto", "curves"])
def test_sweep_figure_titles_fit_the_figure(kind, mapping_sweep):
    options = {"by": "placement"} if kind == "decision_map" else {}
    figure = make_plot(kind, load_source(mapping_sweep), **options)
    figure.canvas.draw()
    for text in _titles(figure):
        box = text.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width, text.get_text()


def _table(points):
    rows = [
        {"point": i, "replicate": 0, "status": "ok", "decision": d, "lat_s": x, "en_j": y}
        for i, (x, y, d) in enumerate(points)
    ]
    return pd.DataFrame(rows)


def test_pareto_count_is_of_distinct_points():
    # (1, 3) twice and (2, 1) on the front, (3, 3) dominated
    table = _table([(1, 3, "a"), (1, 3, "b"), (2, 1, "a"), (3, 3, "a")])
    figure = pareto_plot(table, latency="lat_s", energy="en_j")
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert "Pareto front (2); 1 more point(s) tie" in labels
    table = _table([(1, 3, "a"), (2, 1, "a"), (3, 3, "a")])
    labels = [
        t.get_text() for t in pareto_plot(table, "lat_s", "en_j").axes[0].get_legend().get_texts()
    ]
    assert "Pareto front (2)" in labels


def test_curve_bands_only_behind_two_runs(mapping_sweep, sweep_table):
    # one replicate per point, x and every other parameter in the groups: one run a marker
    figure = make_plot("curves", load_source(mapping_sweep))
    assert not [c for c in figure.axes[0].collections if isinstance(c, PolyCollection)]
    assert "one run per marker" in figure.axes[0].get_title()
    # two replicates per point (plot_data's sweep): bands, said in the title
    figure = sweep_curves(sweep_table, BANDWIDTH, group=LATENCY)
    assert len([c for c in figure.axes[0].collections if isinstance(c, PolyCollection)]) == 2
    assert "band: min–max of the runs" in figure.axes[0].get_title()


def test_log_axes_label_their_ticks_in_plain_text():
    # latency spans 100×, energy 50×: both axes log; the default labels were math text
    # ($\mathdefault{10^{1}}$), drawn as written since every figure has math text off
    table = _table([(1, 50, "a"), (10, 5, "a"), (100, 1, "a")])
    figure = pareto_plot(table, "lat_s", "en_j")
    figure_bytes(figure, "png")
    axes = figure.axes[0]
    assert (axes.get_xscale(), axes.get_yscale()) == ("log", "log")
    labels = [t.get_text() for t in axes.get_xticklabels() + axes.get_yticklabels()]
    assert "10000" in labels and "1000" in labels  # 1 to 100 s in ms, 1 to 50 J in mJ
    assert not [text for text in labels if "$" in text or "mathdefault" in text]


def test_report_draws_at_most_six_maps_and_names_the_rest(tmp_path):
    from itertools import product

    from analysis.kinds import MAX_FACETS

    rows = []
    grid = product(range(3), range(3), range(3), range(4), range(4))
    for point, (a, b, c, d, e) in enumerate(grid):
        rows.append(
            {"point": point, "a": a, "b": b, "c": c, "d_ms": d, "e_ms": e, "replicate": 0}
            | {"status": "ok", "decision": "device" if d > e else "cloud"}
            | {"latency_mean_s": 0.001 * (d + 1), "device_energy_per_inference_j": 0.01}
        )
    pd.DataFrame(rows).to_csv(tmp_path / "sweep.csv", index=False)
    views, notes = decision_map_views(load_source(tmp_path / "sweep.csv"))
    # the axes: the two parameters with the most values; 27 combinations of the others
    assert {(view.x, view.y) for view in views} == {("d_ms", "e_ms")}
    assert len(views) == MAX_FACETS == 6
    assert [view.fixed for view in views[:2]] == ["a=0, b=0, c=0", "a=0, b=0, c=1"]
    assert notes[0] == (
        "a, b, c also vary inside the cells of d_ms × e_ms: one decision map per value of a × b × c"
    )
    assert notes[1].startswith("the first 6 of 27 maps are drawn; draw another with socsim plot")
    page = build_report(tmp_path / "sweep.csv")
    assert page.count('id="plot-decision_map-') == 6 and "the first 6 of 27 maps" in page


def test_a_map_no_parameter_can_untangle_is_a_note(tmp_path):
    # two points in every cell of a × b, told apart by nothing swept: no map, said so
    rows = [
        {"point": p, "a": p // 2 % 2, "b": 0, "replicate": 0, "status": "ok", "decision": "x"}
        | {"latency_mean_s": 0.001, "device_energy_per_inference_j": 0.01}
        for p in range(4)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "sweep.csv", index=False)
    views, notes = decision_map_views(load_source(tmp_path / "sweep.csv"))
    assert views == [] and notes[0].startswith("no decision map: the cells of a × b mix")
    assert notes[0] in build_report(tmp_path / "sweep.csv")
