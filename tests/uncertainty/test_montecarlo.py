"""Monte Carlo runs: hand-computed per-sample results, intervals around the nominal run,
determinism by seed and independence from the executor, sweeps with samples."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.cli import main
from simulator.engine import simulate
from simulator.errors import ScenarioError, SocsimError
from simulator.exitcodes import EXIT_INVALID
from simulator.spec import load_scenario
from simulator.sweep import run_sweep
from simulator.uncertainty.intervals import intervals, sweep_intervals
from simulator.uncertainty.montecarlo import MAX_SAMPLES, check_samples, result_rows, run_samples

ROOT = Path(__file__).resolve().parents[2]
EFFICIENCY = "nodes.phone.units.cpu.efficiency.conv"
ACTIVE_W = "nodes.phone.units.cpu.active_w"

#: One 1 MFLOP conv on a 1 GFLOP/s cpu: latency = 1 ms / efficiency, energy = active_w x
#: latency (no idle power, no memory limit, no dispatch cost); requests 100 ms apart.
HAND = """\
name: hand
seed: 11
nodes:
  phone:
    units:
      cpu:
        kind: cpu
        peak_gflops: {fp32: 1}
        efficiency: {default: 1.0, conv: {low: 0.4, high: 0.8}}
        active_w: {mean: 1.0, sd: 0.1}
models:
  one:
    ops: [{name: a, kind: conv, flops: 1.0e+6, output_elems: 10}]
workload:
  - {app: app, model: one, source: phone, arrival: {process: periodic, period_ms: 100}, count: 3}
placement: {policy: single, unit: cpu}
"""


@pytest.fixture
def hand(tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(HAND)
    return load_scenario(path)


def test_each_sample_is_the_hand_result_of_its_draws(hand):
    table = run_samples(hand, 6, executor="serial")
    assert list(table["sample"].unique()) == list(range(6))
    apps = table[table["app"] == "app"]
    efficiency, active_w = apps[EFFICIENCY], apps[ACTIVE_W]
    assert ((efficiency >= 0.4) & (efficiency <= 0.8)).all() and efficiency.nunique() == 6
    assert apps["latency_mean_s"].to_numpy() == pytest.approx((1e-3 / efficiency).to_numpy())
    assert apps["request_energy_j"].to_numpy() == pytest.approx(
        (active_w * 1e-3 / efficiency).to_numpy()
    )


def test_the_nominal_run_is_the_midpoint_and_the_mean(hand):
    rows = result_rows(simulate(hand, trace="summary"), -1)
    assert rows[0]["latency_mean_s"] == pytest.approx(1e-3 / 0.6)  # (0.4 + 0.8) / 2
    assert rows[0]["request_energy_j"] == pytest.approx(1.0 * 1e-3 / 0.6)


def test_intervals_contain_the_deterministic_result_at_the_mean(hand):
    table = run_samples(hand, 20, executor="serial")
    nominal = result_rows(simulate(hand, trace="summary"), -1)
    found = intervals(table, nominal)
    for metric in ("latency_mean_s", "request_energy_j"):
        row = found[(found["app"] == "app") & (found["metric"] == metric)].iloc[0]
        assert row["p5"] <= row["nominal"] <= row["p95"], metric
        assert row["p5"] <= row["p50"] <= row["p95"] and row["samples"] == 20
    # hand bounds: 1 ms / 0.8 <= latency <= 1 ms / 0.4
    latency = found[(found["app"] == "app") & (found["metric"] == "latency_mean_s")].iloc[0]
    assert latency["p5"] >= 1.25e-3 and latency["p95"] <= 2.5e-3


def test_the_shipped_example_brackets_its_nominal_run():
    """uncertain_pixel3: each app's latency depends on one uncertain peak, monotonically,
    so the nominal run (the means) is the median of its samples' latencies."""
    scenario = load_scenario(ROOT / "scenarios" / "examples" / "uncertain_pixel3.yaml")
    table = run_samples(scenario, 10, executor="serial")
    nominal = result_rows(simulate(scenario, trace="summary"), -1)
    found = intervals(table, nominal)
    latency = found[found["metric"] == "latency_mean_s"].set_index("app")
    for app in ("cpu_fp32", "gpu_fp16", "dsp_int8", "*"):
        assert latency.loc[app, "p5"] < latency.loc[app, "nominal"] < latency.loc[app, "p95"], app


def test_same_seed_same_samples_whatever_the_executor(hand):
    serial = run_samples(hand, 4, executor="serial")
    pd.testing.assert_frame_equal(serial, run_samples(hand, 4, executor="serial"))
    pd.testing.assert_frame_equal(serial, run_samples(hand, 4, executor="processes", workers=2))
    # sample i does not depend on how many are drawn
    pd.testing.assert_frame_equal(serial, run_samples(hand, 6, executor="serial").iloc[:8])


def test_another_seed_draws_other_samples(tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(HAND.replace("seed: 11", "seed: 12"))
    other = run_samples(load_scenario(path), 3, executor="serial")
    path.write_text(HAND)
    assert not other[EFFICIENCY].equals(
        run_samples(load_scenario(path), 3, executor="serial")[EFFICIENCY]
    )


def test_no_distribution_is_a_clear_error(tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text(
        HAND.replace("{low: 0.4, high: 0.8}", "0.5").replace("{mean: 1.0, sd: 0.1}", "1")
    )
    with pytest.raises(SocsimError, match="there is none; give a figure as"):
        run_samples(load_scenario(path), 3, executor="serial")
    for bad in (0, MAX_SAMPLES + 1):
        with pytest.raises(SocsimError, match="--samples takes 1 to"):
            check_samples(bad)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--samples", "3", "--workers", "0"], "--workers takes 1 or more worker processes, got 0"),
        (["--workers", "2"], "--workers sets the processes that run --samples"),
    ],
)
def test_bad_workers_are_refused_before_the_run(tmp_path, capsys, extra, message):
    """--workers 0 used to run on every core, and --workers without --samples did nothing."""
    path = tmp_path / "hand.yaml"
    path.write_text(HAND)
    out = tmp_path / "out"
    assert main(["run", str(path), *extra, "-o", str(out)]) == EXIT_INVALID
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_run_samples_writes_the_tables(tmp_path, capsys):
    path = tmp_path / "hand.yaml"
    path.write_text(HAND)
    out = tmp_path / "out"
    args = ["run", str(path), "--samples", "3", "--executor", "serial", "-o", str(out)]
    assert main(args) == 0
    samples = pd.read_csv(out / "samples.csv")
    assert len(samples) == 6 and set(samples["app"]) == {"app", "*"}
    found = pd.read_csv(out / "intervals.csv")
    assert {"app", "metric", "nominal", "mean", "sd", "p5", "p50", "p95"} <= set(found.columns)
    assert "Monte Carlo: 3 samples of 2 uncertain figure(s)" in capsys.readouterr().out


def test_a_sweep_point_draws_the_samples_of_the_run(hand, tmp_path):
    """Sweep rows stay flat (one per point x sample); sample s of every point draws
    what `run --samples` draws for sample s (common random numbers)."""
    path = tmp_path / "hand.yaml"
    path.write_text(
        HAND + "sweep:\n  mc_samples: 3\n  parameters:\n    workload[0].deadline_ms: [1, 2]\n"
    )
    table = run_sweep(path, tmp_path / "sweep", quiet=True, executor="serial")
    assert list(table["mc_sample"]) == [0, 1, 2, 0, 1, 2]
    assert list(table["workload[0].deadline_ms"]) == [1, 1, 1, 2, 2, 2]
    samples = run_samples(hand, 3, executor="serial")
    expected = samples[samples["app"] == "*"]["latency_mean_s"].to_numpy()
    for deadline in (1, 2):
        mine = table[table["workload[0].deadline_ms"] == deadline]["latency_mean_s"].to_numpy()
        assert mine == pytest.approx(expected, rel=1e-15)
    found = sweep_intervals(table, ["workload[0].deadline_ms"], 3)
    assert list(found["sweep_point"].unique()) == [0, 1]
    assert (found["samples"] == 3).all() and (found["decision_share"] == 1.0).all()
    # every latency is 1.25-2.5 ms: a 1 ms deadline is never met
    assert (table[table["workload[0].deadline_ms"] == 1]["deadline_met_rate"] == 0).all()


def test_a_sweep_with_samples_and_no_distribution_is_refused(tmp_path):
    path = tmp_path / "plain.yaml"
    plain = HAND.replace("{low: 0.4, high: 0.8}", "0.5").replace("{mean: 1.0, sd: 0.1}", "1")
    path.write_text(plain + "sweep:\n  mc_samples: 3\n  parameters:\n    seed: [1]\n")
    with pytest.raises(ScenarioError):
        run_sweep(path, tmp_path / "sweep", quiet=True, executor="serial")


def test_a_sampled_sweep_is_the_same_whatever_the_executor(tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(
        HAND + "sweep:\n  mc_samples: 3\n  parameters:\n    workload[0].count: [1, 2]\n"
    )
    serial = run_sweep(path, tmp_path / "serial", quiet=True, executor="serial")
    processes = run_sweep(path, tmp_path / "processes", quiet=True, executor="processes", workers=2)
    pd.testing.assert_frame_equal(serial, processes)


def test_resuming_with_other_samples_names_the_flag(tmp_path):
    from simulator.sweep import SweepFolderError

    path = tmp_path / "hand.yaml"
    path.write_text(HAND + "sweep:\n  mc_samples: 2\n  parameters:\n    workload[0].count: [1]\n")
    run_sweep(path, tmp_path / "out", quiet=True, executor="serial")
    with pytest.raises(SweepFolderError, match="--mc-samples: 2 before, 3 now"):
        run_sweep(path, tmp_path / "out", quiet=True, executor="serial", mc_samples=3)


def test_a_sweep_may_set_a_distribution_key(tmp_path):
    """Sweeping `high` of {low: 0.4, high: ...}: at 0.4 the distribution is a point, so
    every sample runs at 1 ms / 0.4 = 2.5 ms; a high below low is refused before any run."""
    path = tmp_path / "hand.yaml"
    path.write_text(HAND)
    high = "nodes.phone.units.cpu.efficiency.conv.high"
    table = run_sweep(
        path, tmp_path / "s", {high: [0.4, 0.8]}, quiet=True, executor="serial", mc_samples=3
    )
    at_low = table[table[high] == 0.4]["latency_mean_s"].to_numpy()
    assert at_low == pytest.approx([2.5e-3] * 3, rel=1e-12)
    assert table[table[high] == 0.8]["latency_mean_s"].nunique() == 3
    with pytest.raises(ScenarioError, match=r"high 0\.3 is below low 0\.4"):
        run_sweep(path, tmp_path / "t", {high: [0.3]}, quiet=True, executor="serial", mc_samples=3)
