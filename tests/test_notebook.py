"""docs/notebook_example.ipynb runs, and a run shows itself briefly (issue 21, item 5).

nbclient and nbformat are not dependencies: the notebook's code cells are executed here in
order, in one namespace, from the docs/ folder, with matplotlib's Agg backend, as a
kernel would run them top to bottom.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebook_example.ipynb"


def code_cells(path: Path) -> list[str]:
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["nbformat"] == 4
    return ["".join(c["source"]) for c in document["cells"] if c["cell_type"] == "code"]


def test_the_example_notebook_runs_top_to_bottom(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(NOTEBOOK.parent)
    namespace: dict = {"__name__": "__main__"}
    for index, source in enumerate(code_cells(NOTEBOOK)):
        try:
            exec(compile(source, f"{NOTEBOOK.name}[cell {index}]", "exec"), namespace)
        except Exception as exc:  # say which cell
            pytest.fail(f"cell {index} of {NOTEBOOK.name} raised {exc!r}:\n{source}")
    result, table = namespace["result"], namespace["table"]
    assert result.summary["completed"] == result.summary["requests"] == 20
    assert list(table["links.uplink.bandwidth_mbps"]) == [2, 5, 10, 20, 50]
    assert (table["status"] == "ok").all()
    # a slower uplink cannot make the offloaded frame faster
    assert table["latency_mean_s"].is_monotonic_decreasing
    assert namespace["figure"].axes
    assert not Path(namespace["folder"].name).exists()  # the last cell cleaned up


@pytest.fixture(scope="module")
def alexnet_run():
    from simulator import load_scenario, simulate

    return simulate(load_scenario(ROOT / "scenarios/examples/alexnet_phone_cloud.yaml"))


def test_repr_is_three_lines_of_figures_and_table_sizes(alexnet_run):
    text = repr(alexnet_run)
    summary = alexnet_run.summary
    assert len(text.splitlines()) == 3 and len(text) < 600  # was 17,875 characters
    assert "scenario='alexnet_phone_cloud' seed=7 replicate=0 trace=full" in text
    assert "requests done 20/20" in text
    assert f"latency mean {summary['latency_mean_s'] * 1e3:.4g} ms" in text
    assert f"latency p95 {summary['latency_p95_s'] * 1e3:.4g} ms" in text
    assert f"energy (all nodes) {summary['energy_j']:.4g} J" in text
    for name, table in alexnet_run.tables().items():
        assert f" {name}={len(table)}" in text
    assert "ops=360" in text  # 20 requests x 18 ops of AlexNet's placement


def test_html_repr_shows_the_same_and_escapes_text(alexnet_run):
    import dataclasses

    page = alexnet_run._repr_html_()
    assert "<td>20/20</td>" in page and "<td><code>ops</code></td><td>360</td>" in page
    hostile = dataclasses.replace(
        alexnet_run, summary={**alexnet_run.summary, "decision": "<script>x&y</script>"}
    )
    page = hostile._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;x&amp;y&lt;/script&gt;" in page
    assert "x&y" in repr(hostile)  # text repr is text


def test_repr_of_a_run_without_completed_requests_says_n_a(alexnet_run):
    import dataclasses

    empty = dataclasses.replace(
        alexnet_run,
        summary={**alexnet_run.summary, "completed": 0, "latency_mean_s": float("nan")},
    )
    assert "requests done 0/20, latency mean n/a" in repr(empty)
