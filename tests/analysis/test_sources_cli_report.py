"""Reading sweeps and runs back, `socsim plot` and `socsim report` end to end."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest
from plot_data import BANDWIDTH, LATENCY, split_document

from analysis.kinds import PLOTS, decision_map_views, kinds_for, make_plot
from analysis.neurosurgeon_map import run_grid, set_path
from analysis.report import build_report
from analysis.sources import Source, Sweep, load_source, load_sweep
from analysis.style import label_of
from simulator.cli import main
from simulator.errors import SocsimError
from simulator.exitcodes import EXIT_INVALID

SWEEP_KINDS = ("decision_map", "pareto", "curves")
RUN_KINDS = ("gantt", "energy", "utilisation")


def test_every_kind_is_covered():
    assert set(PLOTS) == {*SWEEP_KINDS, *RUN_KINDS}


def test_sweep_folder_reads_back_with_its_parameters(sweep_dir, sweep_table):
    sweep = load_sweep(sweep_dir)
    assert sweep.parameters == (BANDWIDTH, LATENCY)
    assert json.loads((sweep_dir / "sweep.json").read_text())["points"] == 6
    assert len(sweep.table) == len(sweep_table) == 12 and len(sweep.ok) == 12
    assert load_source(sweep_dir / "sweep.csv").kind == "sweep"


def test_parameters_are_inferred_without_sweep_json(sweep_table, tmp_path):
    sweep_table.to_parquet(tmp_path / "sweep.parquet", index=False)
    sweep_table.head(1).to_csv(tmp_path / "sweep.csv", index=False)
    sweep = load_sweep(tmp_path)  # parquet first
    assert sweep.parameters == (BANDWIDTH, LATENCY) and len(sweep.table) == 12


def test_run_grid_keeps_a_failing_point_as_an_error_row():
    table = run_grid(split_document(), {BANDWIDTH: [10, -1]})
    assert table["status"].tolist() == ["ok", "error"]
    assert "bandwidth_mbps" in table["error"].iloc[1]
    assert list(table.columns[:8]) == [
        "point",
        BANDWIDTH,
        "replicate",
        "seed",
        "status",
        "error",
        "decision",
        "scenario",
    ]
    # failed rows are left out of the plots, not drawn as zeros
    source = Source(path=Path("."), sweep=Sweep(table, (BANDWIDTH,)))
    assert "over 1 points" in make_plot("pareto", source).axes[0].get_title()


def test_set_path_walks_lists_and_names_a_missing_step():
    document = {"workload": [{"arrival": {"rate_hz": 1}}]}
    set_path(document, "workload[0].arrival.rate_hz", 5)
    assert document["workload"][0]["arrival"]["rate_hz"] == 5
    with pytest.raises(SocsimError, match=r"nothing at 'workload.1'"):
        set_path(document, "workload[1].arrival.rate_hz", 5)


def test_bad_sources_and_kinds_are_clear(tmp_path, run_dir, sweep_dir):
    with pytest.raises(SocsimError, match="neither a run folder"):
        load_source(tmp_path)
    with pytest.raises(SocsimError, match="no such file"):
        load_source(tmp_path / "nope")
    with pytest.raises(SocsimError, match=r"unknown plot kind 'paretto' \(did you mean 'pareto'"):
        make_plot("paretto", load_source(sweep_dir))
    with pytest.raises(SocsimError, match=r"'gantt' needs a run folder, but .* is a sweep"):
        make_plot("gantt", load_source(sweep_dir))
    with pytest.raises(SocsimError, match=r"'curves' needs a sweep, but .* is a run folder"):
        make_plot("curves", load_source(run_dir))
    with pytest.raises(SocsimError, match=r"takes no option y; it takes: requests, title"):
        make_plot("gantt", load_source(run_dir), y="z")


@pytest.mark.parametrize("kind", [*SWEEP_KINDS, *RUN_KINDS])
def test_socsim_plot_writes_each_kind(kind, run_dir, sweep_dir, tmp_path, capsys):
    source = sweep_dir if kind in SWEEP_KINDS else run_dir
    out = tmp_path / f"{kind}.png"
    assert main(["plot", kind, str(source), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert matplotlib.image.imread(out)[..., :3].std() > 0.05


def test_socsim_plot_options_and_errors(sweep_dir, run_dir, tmp_path, capsys):
    out = tmp_path / "c.svg"
    args = ["plot", "curves", str(sweep_dir), "-o", str(out), "--x", LATENCY]
    assert main([*args, "--metric", "device_energy_j", "--title", "T"]) == 0
    assert out.read_text().startswith("<?xml") and "latency (ms)" in out.read_text()
    assert main(["plot", "gantt", str(run_dir), "--requests", "1"]) == 0
    assert (run_dir / "gantt.png").exists()  # the default output sits beside the source
    assert main(["plot", "decision_map", str(sweep_dir), "--x", "nope_ms"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "no column 'nope_ms'" in err and "available: point," in err


def _embedded_images(page: str) -> list[bytes]:
    return [
        base64.b64decode(data) for data in re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    ]


@pytest.mark.parametrize("which", ["run", "sweep"])
def test_report_embeds_every_figure_and_the_tables(which, run_dir, sweep_dir, tmp_path):
    source = run_dir if which == "run" else sweep_dir
    out = tmp_path / "report.html"
    assert main(["report", str(source), "-o", str(out)]) == 0
    page = out.read_text()
    kinds = kinds_for(load_source(source))
    assert kinds == list(RUN_KINDS if which == "run" else SWEEP_KINDS)
    for kind in kinds:
        assert f'id="plot-{kind}"' in page
    images = _embedded_images(page)
    assert len(images) == len(kinds)
    for image in images:
        assert matplotlib.image.imread(io.BytesIO(image), format="png")[..., :3].std() > 0.05
    assert 'src="http' not in page and "<link" not in page  # self-contained
    if which == "run":
        assert "<h2>summary</h2>" in page and "latency_p50_s" in page and "<h2>units</h2>" in page
    else:
        assert "6 points, 12 runs, 12 ok" in page and "points (means over replicates)" in page


def test_report_lists_failed_runs_and_embeds_svg(sweep_table, tmp_path):
    table = sweep_table.copy()
    table.loc[0, ["status", "error"]] = ["error", "boom: bad bandwidth"]
    table.to_csv(tmp_path / "sweep.csv", index=False)
    page = build_report(tmp_path / "sweep.csv", fmt="svg")
    assert "failed runs (1)" in page and "boom: bad bandwidth" in page
    assert page.count('src="data:image/svg+xml;base64,') == 3


def test_where_selects_rows_and_a_mixed_cell_is_refused(sweep_table, run_dir, tmp_path, capsys):
    # a third parameter that varies inside the cells of bandwidth × latency
    table = pd.concat(
        [sweep_table.assign(**{"models.m.dtype": d}) for d in ("fp32", "fp16")], ignore_index=True
    )
    table["point"] = table["point"] + 6 * (table["models.m.dtype"] == "fp16")
    table = table[["point", BANDWIDTH, LATENCY, "models.m.dtype", *sweep_table.columns[3:]]]
    table.to_csv(tmp_path / "sweep.csv", index=False)
    assert main(["plot", "decision_map", str(tmp_path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "holds 2 sweep points; models.m.dtype also varies" in err
    # the report draws one map per dtype, and says so
    views, notes = decision_map_views(load_source(tmp_path))
    assert [view.fixed for view in views] == ["models.m.dtype=fp16", "models.m.dtype=fp32"]
    assert notes == [
        f"models.m.dtype also varies inside the cells of {BANDWIDTH} × {LATENCY}: "
        "one decision map per value of models.m.dtype"
    ]
    out = tmp_path / "map.png"
    assert main(["plot", "decision_map", str(tmp_path), "--where", "models.m.dtype=fp16"]) == 0
    assert (
        main(["plot", "decision_map", str(tmp_path), "-o", str(out), "--by", "models.m.dtype"]) == 0
    )
    # the default axes skip the `by` column: bandwidth across, dtype up
    axes = make_plot("decision_map", load_source(tmp_path), by=LATENCY).axes[0]
    assert (axes.get_xlabel(), axes.get_ylabel()) == (label_of(BANDWIDTH), "models.m.dtype")
    sweep = load_sweep(tmp_path).where({BANDWIDTH: "10", "models.m.dtype": "fp32"})
    assert sorted(sweep.table["point"].unique()) == [2, 3]
    with pytest.raises(SocsimError, match=r"no row has it; values: 10, 100, 2"):
        load_sweep(tmp_path).where({BANDWIDTH: "3"})
    capsys.readouterr()
    assert main(["plot", "gantt", str(run_dir), "--where", "a=b"]) == EXIT_INVALID
    assert f"--where selects sweep rows, but {run_dir} is a run folder" in capsys.readouterr().err
    assert main(["plot", "pareto", str(tmp_path), "--where", "a"]) == EXIT_INVALID
    assert "--where takes PATH=VALUE, got 'a'" in capsys.readouterr().err
