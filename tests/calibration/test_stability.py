"""Boundary kernels left out of the fits, in-network sweeps, the reference model's
spread and ``socsim calibrate compare`` (hand-computed values, no onnxruntime)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.compare import compare_folders, compare_markdown
from calibration.measure import boundary
from calibration.reference import contended, speedup, spread
from calibration.report import ThreadResult, holdout_section
from calibration.sweeps import FAMILIES, build_sweep
from calibration.table import network_rows
from simulator.cli import main
from simulator.errors import SocsimError
from simulator.exitcodes import EXIT_INVALID, EXIT_OK
from simulator.graph.model import Edge, ModelGraph, Op


def test_boundary_marks_ops_without_producer_or_consumer():
    ops = [Op(n, "activation", input_elems=4, output_elems=4) for n in "abcd"]
    graph = ModelGraph("g", ops, [Edge("a", "b", 16), Edge("b", "c", 16), Edge("a", "d", 16)])
    assert [boundary(graph, n) for n in "abcd"] == [True, False, True, True]


def test_network_rows_drop_boundary_rows_of_kinds_measured_inside():
    rows = pd.DataFrame(
        {
            "node": ["in", "k", "out", "old", "pool_in", "pool_out"],
            "kind": ["activation", "conv", "conv", "conv", "pool", "pool"],
            "boundary": [1, 0, 1, math.nan, 1, 1],
        }
    )
    # conv has an in-network row: its boundary row goes (NaN: not known, kept); the
    # activation and pool rows are all at the boundary: kept, better than nothing
    assert list(network_rows(rows)["node"]) == ["in", "k", "old", "pool_in", "pool_out"]
    assert list(network_rows(rows.drop(columns="boundary"))["node"]) == list(rows["node"])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_sweep_kernel_runs_inside_a_network(family):
    """Graph inputs are read by a ReLU only, graph outputs are written by a ReduceMax."""
    model = build_sweep(f"sweep_{family}_0", seed=7, kernels=4)
    graph = model.graph
    readers = {i.name: [n.op_type for n in graph.node if i.name in n.input] for i in graph.input}
    assert readers and all(kinds == ["Relu"] for kinds in readers.values())
    producers = {o: n.op_type for n in graph.node for o in n.output}
    assert len(graph.output) == 4
    assert {producers[o.name] for o in graph.output} == {"ReduceMax"}


def test_memory_sweeps_include_shufflenet_split():
    kinds = {
        n.op_type for i in range(6) for n in build_sweep(f"sweep_memory_{i}", seed=7).graph.node
    }
    assert {"Split", "Transpose", "Concat", "BatchNormalization"} <= kinds


def test_reference_spread():
    table = pd.DataFrame({"median_s": [1.0e-3, 1.2e-3, 1.1e-3, 1.0e-3]})
    assert spread(table) == pytest.approx({"median_s": 1.05e-3, "spread_pct": 20.0})
    assert math.isnan(spread(table.iloc[:0])["spread_pct"])


def test_reference_speedup_and_contention_by_hand():
    """1-thread round medians 0.20/0.21/0.22 ms (median 0.21); at 2 threads 0.125/0.13/
    0.135 (0.13): 0.21 / 0.13 = 1.615x, free cores. 0.20/0.21/0.22 again at 2 threads:
    1.0x, below 1 + 0.1 x (2 - 1) = 1.1: contended. 1 thread is never contended."""
    one = pd.DataFrame({"median_s": [0.20e-3, 0.21e-3, 0.22e-3]})
    free = pd.DataFrame({"median_s": [0.125e-3, 0.13e-3, 0.135e-3]})
    assert speedup(one, free) == pytest.approx(0.21 / 0.13)
    assert speedup(one, one) == pytest.approx(1.0)
    assert (contended(speedup(one, free), 2), contended(1.0, 2)) == (False, True)
    assert (contended(1.09, 2), contended(1.11, 2), contended(1.25, 4)) == (True, False, True)
    assert not contended(0.5, 1)
    assert math.isnan(speedup(one, one.iloc[:0]))


def test_the_report_says_when_the_extra_threads_found_the_cores_busy():
    holdout = pd.DataFrame(
        {"model": ["a"], "measured_s": [1e-3], "iqr_s": [1e-5], "predicted_s_original": [1.05e-3],
         "error_pct_original": [5.0], "ops_original": [2]}
    )  # fmt: skip
    kernels = pd.DataFrame(
        {"model": ["a", "a"], "node": ["x", "y"], "kind": ["conv", "pool"],
         "measured_s": [6e-4, 3e-4], "error_pct": [2.0, -20.0]}
    )  # fmt: skip
    for gain, busy in (("1.00", True), ("1.62", False)):
        prov = {"reference_speedup": gain, "parallel_fractions_measured": "conv=0.958"}
        result = ThreadResult(2, "host_cpu_2t.yaml", prov, holdout, kernels, holdout, kernels)
        text = "\n".join(holdout_section(result))
        assert f"The reference model ran {gain}x as fast at 2 threads as at 1" in text
        assert ("describe a contended host" in text) is busy
        assert ("conv=0.958 (on that contended host" in text) is busy


def _run(folder, predicted_ms, measured_ms, reference_ms=None, suffix=""):
    folder.mkdir(exist_ok=True)
    pd.DataFrame(
        {
            "model": ["a", "b"],
            "measured_s": [m * 1e-3 for m in measured_ms],
            "predicted_s_original": [p * 1e-3 for p in predicted_ms],
        }
    ).to_csv(folder / f"validation{suffix}.csv", index=False)
    if reference_ms is not None:
        pd.DataFrame({"round": range(len(reference_ms)), "median_s": reference_ms}).to_csv(
            folder / f"reference{suffix}.csv", index=False
        )


def test_compare_folders_hand_computed(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    _run(one, [10.0, 20.0], [10.0, 25.0], [2.0, 2.2])  # reference median 2.1, spread 10 %
    _run(two, [10.2, 19.0], [11.0, 25.0], [2.31, 2.31])  # 2.31 = 2.1 x 1.1
    _run(one, [5.0, 8.0], [5.0, 8.0], suffix="_2t")
    _run(two, [5.0, 8.0], [5.0, 8.0], suffix="_2t")
    (first, second) = compare_folders(one, two)
    assert first["threads"] == 1 and second["threads"] == 2
    assert first["within_pct"] == pytest.approx(5.0) and first["worst"] == "b"  # 19 / 20
    assert first["measured_within_pct"] == pytest.approx(10.0)
    # a: prediction +2 %, measurement +10 %: 8 points apart; b: -5 % and 0 %: 5 points
    assert first["tracking_pts"] == pytest.approx(8.0) and first["tracking_worst"] == "a"
    assert first["reference_change_pct"] == pytest.approx(10.0)
    assert first["reference_spread_pct"] == pytest.approx(10.0)
    assert second["within_pct"] == 0.0 and math.isnan(second["reference_change_pct"])
    text = compare_markdown(one, two, [first, second])
    assert "1 thread(s): two runs agree within 5.0 % (worst b)" in text
    assert "moved with its own measurement within 8.0 points (worst a)" in text
    assert "| b | 20.00 | 19.00 | -5.0 % | 25.00 | 25.00 | +0.0 % |" in text


def test_compare_cli_exit_status_and_docs(tmp_path, capsys):
    one, two = tmp_path / "one", tmp_path / "two"
    _run(one, [10.0, 20.0], [10.0, 20.0])
    _run(two, [10.2, 20.0], [10.0, 20.0])  # +2 %
    docs = tmp_path / "calibration.md"
    docs.write_text("# Calibration\n")
    assert main(["calibrate", "compare", str(one), str(two), "--docs", str(docs)]) == EXIT_OK
    assert "agree within 2.0 %" in capsys.readouterr().out
    assert "calibration-stability:begin" in docs.read_text()
    code = main(["calibrate", "compare", str(one), str(two), "--tolerance", "1"])
    assert code == EXIT_INVALID
    assert main(["calibrate", "compare", str(one), str(tmp_path / "none")]) == EXIT_INVALID
    assert "no folder" in capsys.readouterr().err


def test_time_stats_and_the_q1_and_mean_statistics(tmp_path):
    from calibration.runstats import time_stats
    from calibration.table import MeasurementError, make_table, read_table, write_table

    stats = time_stats([1.0, 2.0, 3.0, 4.0, 5.0])  # numpy's linear quartiles: 2 and 4
    assert stats == {"median_s": 3.0, "iqr_s": 2.0, "q1_s": 2.0, "mean_s": 3.0}
    row = {
        "level": "op",
        "model": "m",
        "node": "n",
        "kind": "conv",
        "op_type": "Conv",
        "dtype": "fp32",
        "shapes": "",
        "flops": 1.0,
        "bytes": 1.0,
        "runs": 5,
        "threads": 1,
        **stats,
    }
    path = tmp_path / "t.csv"
    write_table(make_table([row]), path)
    assert read_table(path)["median_s"].iloc[0] == 3.0
    assert read_table(path, "q1")["median_s"].iloc[0] == 2.0
    assert read_table(path, "mean")["median_s"].iloc[0] == 3.0
    write_table(make_table([{k: v for k, v in row.items() if k not in ("q1_s", "mean_s")}]), path)
    with pytest.raises(MeasurementError, match="needs a 'q1_s'"):
        read_table(path, "q1")
    with pytest.raises(MeasurementError, match="needs a 'mean_s'"):
        read_table(path, "mean")
    with pytest.raises(MeasurementError, match="statistic must be one of"):
        read_table(path, "mode")


def test_trimmed_mean_cuts_a_tenth_at_each_end_and_adds_up_over_kernels():
    from calibration.runstats import binned_time_stats, trimmed_mean

    # ten runs: the lowest (1) and the highest (a preempted 100) are cut: mean of 2..9
    assert trimmed_mean([5.0, 1.0, 2.0, 3.0, 4.0, 100.0, 6.0, 7.0, 8.0, 9.0]) == 5.5
    assert trimmed_mean([2.0, 4.0], trim=0.0) == 3.0
    with pytest.raises(ValueError, match="trim"):
        trimmed_mean([1.0], trim=0.5)
    with pytest.raises(ValueError, match="no readings"):
        trimmed_mean([])
    # a core that flips between 1x and 1.5x: two kernels of 10 and 20 us, each run in
    # one mode, 40 % of runs slow. The medians sit in the fast mode (30 us together),
    # the means at 1.2x (36 us), as the model's own runs average (no run cut: trim 0)
    slow = [False] * 6 + [True] * 4
    a = [10.0 * (1.5 if s else 1.0) for s in slow]
    b = [20.0 * (1.5 if s else 1.0) for s in slow]
    model = [x + y for x, y in zip(a, b, strict=True)]
    assert (np.median(a), np.median(b)) == (10.0, 20.0)
    assert trimmed_mean(a, 0.0) + trimmed_mean(b, 0.0) == pytest.approx(trimmed_mean(model, 0.0))
    assert trimmed_mean(model, 0.0) == pytest.approx(36.0)
    # the profiler's whole microseconds: a reading d stands for [d, d + 1 us)
    assert binned_time_stats([3e-6] * 10)["mean_s"] == pytest.approx(3.5e-6)


def test_compare_reports_lower_quartiles(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, q1 in ((one, [8.0, 16.0]), (two, [8.4, 16.0])):  # +5 %
        _run(folder, [10.0, 20.0], [10.0, 20.0])
        pd.DataFrame({"level": "model", "model": ["a", "b"], "q1_s": q1}).to_csv(
            folder / "holdout.csv", index=False
        )
    (summary,) = compare_folders(one, two)
    assert summary["q1_within_pct"] == pytest.approx(5.0)
    assert "(their lower quartiles within 5.0 %)" in compare_markdown(one, two, [summary])


def _kernel_rows(folder, measured_us, predicted_us, suffix=""):
    """kernels{suffix}.csv of hold-out models a, b (two kernels each) and fit model f."""
    pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "f"],
            "node": ["n1", "n2", "n1", "n2", "n1"],
            "measured_s": [m * 1e-6 for m in measured_us],
            "predicted_s": [p * 1e-6 for p in predicted_us],
        }
    ).to_csv(folder / f"kernels{suffix}.csv", index=False)


def test_compare_kernel_agreement_hand_computed(tmp_path):
    """Shares of the hold-out models' kernels within ±10 %: between the two runs'
    measurements, between their predictions, and each run's against its own; the fit
    model's kernel (f) is not counted, a change of exactly 10 % is within."""
    one, two = tmp_path / "one", tmp_path / "two"
    _run(one, [10.0, 20.0], [10.0, 20.0])
    _run(two, [10.0, 20.0], [10.0, 20.0])
    _kernel_rows(one, [100, 100, 100, 100, 100], [100, 100, 100, 100, 100])
    # measured: +5, +10, +20, -15 % -> 2 of 4; predicted: +0, +30, +0, +0 % -> 3 of 4
    # run 2 against itself: 100/105, 130/110, 100/120, 100/85 -> only the first
    _kernel_rows(two, [105, 110, 120, 85, 500], [100, 130, 100, 100, 1])
    (summary,) = compare_folders(one, two)
    kernels = summary["kernels"]
    assert kernels["n"] == 4
    assert kernels["measured"] == pytest.approx(0.5)
    assert kernels["predicted"] == pytest.approx(0.75)
    assert kernels["accuracy_1"] == pytest.approx(1.0)
    assert kernels["accuracy_2"] == pytest.approx(0.25)
    text = compare_markdown(one, two, [summary])
    assert "Kernels of these models (4): the two runs measured 50.0 % of them" in text
    assert "predicted 75.0 % within ±10 % of each other" in text
    assert "own measurements: 100.0 % and 25.0 %." in text


def test_compare_without_kernel_tables_says_nothing_of_kernels(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    _run(one, [10.0, 20.0], [10.0, 20.0])
    _run(two, [10.0, 20.0], [10.0, 20.0])
    (summary,) = compare_folders(one, two)
    assert summary["kernels"] is None
    assert "Kernels of" not in compare_markdown(one, two, [summary])
    _kernel_rows(one, [100] * 5, [100] * 5)
    _kernel_rows(two, [100] * 5, [100] * 5)
    (two / "kernels.csv").write_text("model,node\na,n1\n")
    with pytest.raises(SocsimError, match="lacks column"):
        compare_folders(one, two)


def test_warning_summary_names_every_category():
    """Three 0 W warnings of one unit and two predictor-range warnings of two features:
    the summary counts each category (the most frequent first) and its distinct
    messages, and quotes one message of each."""
    import warnings

    from calibration.pipeline import warning_summary
    from simulator.hardware.predictor import PredictorRangeWarning
    from simulator.spec.assumptions import UnitAssumptionWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            warnings.warn("unit 'cpu' draws 0 W", UnitAssumptionWarning, stacklevel=1)
        warnings.warn("concat net_weight_bytes above range", PredictorRangeWarning, stacklevel=1)
        warnings.warn("pool pool_taps above range", PredictorRangeWarning, stacklevel=1)
    assert warning_summary(caught) == (
        "5 warning(s) while predicting: "
        "3 UnitAssumptionWarning (1 distinct; e.g. unit 'cpu' draws 0 W); "
        "2 PredictorRangeWarning (2 distinct; e.g. concat net_weight_bytes above range)"
    )


def test_binned_time_stats_by_hand():
    """Whole-µs readings as grouped data: each reading d stands for [d, d + 1) µs."""
    from calibration.runstats import binned_time_stats

    # every run read 3 µs: the kernel took 3 to 4 µs; quartiles at 1/4, 1/2, 3/4 of the bin
    stats = binned_time_stats([3e-6] * 8)
    assert stats["median_s"] == pytest.approx(3.5e-6)
    assert stats["q1_s"] == pytest.approx(3.25e-6)
    assert stats["iqr_s"] == pytest.approx(0.5e-6)
    # 2 readings of 3 µs, 6 of 4 µs: the median (4th of 8) is 2 of the 6 into [4, 5): 4 + 2/6
    stats = binned_time_stats([3e-6, 3e-6] + [4e-6] * 6)
    assert stats["median_s"] == pytest.approx(4e-6 + 2 / 6 * 1e-6)
    # q1 (2nd of 8) ends the 3 µs bin; q3 (6th of 8) is 4 of 6 into the 4 µs bin
    assert stats["q1_s"] == pytest.approx(4e-6)
    assert stats["iqr_s"] == pytest.approx(4 / 6 * 1e-6)
    with pytest.raises(ValueError, match="no readings"):
        binned_time_stats([])
    with pytest.raises(ValueError, match="positive"):
        binned_time_stats([1e-6], quantum_s=0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=60))
def test_binned_quartiles_split_the_readings_intervals(readings_us):
    """A reading d stands for [d, d + 1) µs: at most a quarter (half) of those intervals lie
    wholly below the lower quartile (median) and at most three quarters (half) wholly
    above; each lies between its middle readings and one step above them."""
    from calibration.runstats import binned_time_stats

    n = len(readings_us)
    ordered = sorted(readings_us)
    stats = binned_time_stats([r * 1e-6 for r in readings_us])
    tol = 1e-9
    for fraction, value_s in ((0.25, stats["q1_s"]), (0.5, stats["median_s"])):
        q = value_s / 1e-6
        assert sum(d + 1 <= q - tol for d in readings_us) <= fraction * n
        assert sum(d >= q + tol for d in readings_us) <= (1 - fraction) * n
        rank = fraction * (n - 1)
        assert ordered[math.floor(rank)] - tol <= q <= ordered[math.ceil(rank)] + 1 + tol
    assert stats["iqr_s"] >= 0


def test_kernel_rows_read_the_profiler_as_grouped_data(tmp_path):
    """``measure`` tabulates a kernel's whole-µs readings as grouped data and drops a
    kernel the profiler read as 0 µs in most runs."""
    from calibration.measure import model_rows
    from calibration.ortrun import ModelRun, NodeTimes

    ops = [
        Op("a", "activation", input_elems=100, output_elems=100),
        Op("b", "activation", input_elems=100, output_elems=100),
        Op("c", "activation", input_elems=100, output_elems=100),
    ]
    graph = ModelGraph("g", ops, [Edge("a", "b", 400), Edge("b", "c", 400)])
    run = ModelRun(
        nodes=(
            NodeTimes("a", "Relu", "", (3e-6,) * 4),
            NodeTimes("b", "Relu", "", (0.0, 0.0, 0.0, 1e-6)),  # under 1 µs in most runs
            NodeTimes("c", "Relu", "", (5e-6, 5e-6, 6e-6, 6e-6)),
        ),
        e2e_s=(20e-6, 21e-6, 22e-6),
        optimized_path=tmp_path / "g.onnx",
    )
    rows = {r["node"]: r for r in model_rows("g", run, graph, threads=1)}
    assert set(rows) == {"a", "c", ""}
    assert rows["a"]["median_s"] == pytest.approx(3.5e-6)
    assert rows["c"]["median_s"] == pytest.approx(6e-6)  # the 5 µs bin ends at the median
    # end-to-end times come from a fine clock: plain quartiles
    assert rows[""]["median_s"] == pytest.approx(21e-6)


def test_half_stats_split_the_runs_in_the_order_they_were_timed():
    from calibration.runstats import binned_time_stats, half_stats

    # eight runs: the first four fast (1 s), the last four slow (2 s)
    halves = half_stats([1.0] * 4 + [2.0] * 4)
    assert (halves["median_h1_s"], halves["median_h2_s"]) == (1.0, 2.0)
    assert (halves["q1_h1_s"], halves["mean_h2_s"]) == (1.0, 2.0)
    # the profiler's whole microseconds: each half read as grouped data
    binned = half_stats([3e-6] * 4 + [5e-6] * 4, binned_time_stats)
    assert binned["mean_h1_s"] == pytest.approx(3.5e-6)
    assert binned["median_h2_s"] == pytest.approx(5.5e-6)
    # fewer than four runs in a half: no statistic for it (seven runs: 3 and 4)
    assert all(math.isnan(v) for v in half_stats([1.0] * 6).values())
    seven = half_stats([1.0] * 7)
    assert math.isnan(seven["mean_h1_s"]) and seven["mean_h2_s"] == 1.0


def test_half_repeatability_counts_in_network_kernels_whose_halves_agree():
    from calibration.table import half_repeatability

    def row(h1, h2, boundary=0, level="op"):
        cells = {"level": level, "kind": "conv", "boundary": boundary}
        for s in ("median", "q1", "mean"):
            cells[f"{s}_h1_s"], cells[f"{s}_h2_s"] = h1[s], h2[s]
        return cells

    same = {"median": 1.0, "q1": 1.0, "mean": 1.0}
    rows = pd.DataFrame(
        [
            # the median jumped between modes (1 -> 1.5), the mean moved 5 %
            row(same, {"median": 1.5, "q1": 1.0, "mean": 1.05}),
            row(same, {"median": 1.5, "q1": 1.2, "mean": 1.05}),
            row(same, same),
            row(same, {"median": 9.0, "q1": 9.0, "mean": 9.0}, boundary=1),  # left out
            row(same, {"median": 9.0, "q1": 9.0, "mean": 9.0}, level="model"),  # left out
        ]
    )
    shares = half_repeatability(rows)
    assert shares == pytest.approx({"median": 1 / 3, "q1": 2 / 3, "mean": 1.0})
    assert half_repeatability(rows.drop(columns=["mean_h1_s"])).keys() == {"median", "q1"}
