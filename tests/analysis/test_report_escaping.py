"""`socsim report` escapes every user-supplied string: scenario, app, unit and model names,
file names, sweep parameters and their values, error messages."""

from __future__ import annotations

from html.parser import HTMLParser

from conftest import phone_cloud_document
from plot_data import BANDWIDTH, LATENCY

from analysis.report import build_report
from simulator.engine import simulate
from simulator.spec import parse_scenario

EVIL = "<script>alert(\"x\")</script> & 'q' <img src=x onerror=alert(1)>"
#: the tags the report itself writes (pandas' to_html adds thead/tbody/tr/th/td)
PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "figure", "img",
    "figcaption", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def _check(page: str) -> str:
    parser = _Tags()
    parser.feed(page)
    assert {tag for tag, _ in parser.tags} <= PAGE_TAGS
    for _, attrs in parser.tags:
        assert not any(name.startswith("on") for name, _ in attrs)
    assert "<script" not in page.lower() and "<img src=x" not in page
    text = "".join(parser.text)
    assert EVIL in text  # shown as text, intact
    return text


def test_run_report_escapes_names_and_the_folder_name(tmp_path):
    document = phone_cloud_document()
    # the scenario name is a folder-safe slug (tests/faults/test_output_names.py)
    model = next(iter(document["models"]))
    document["models"] = {EVIL: document["models"][model]}
    document["workload"][0]["model"] = EVIL
    document["workload"][0]["count"] = 2
    result = simulate(parse_scenario(document))
    folder = tmp_path / "<b>run & 'x'"
    result.write(folder, parquet=False)
    text = _check(build_report(folder))
    assert "<b>run & 'x'" in text


def test_sweep_report_escapes_parameters_values_decisions_and_errors(sweep_table, tmp_path):
    table = sweep_table.rename(columns={LATENCY: f"links.{EVIL}"})
    table["decision"] = EVIL
    table[BANDWIDTH] = table[BANDWIDTH].astype(object)
    table.loc[0, BANDWIDTH] = EVIL
    table.loc[1, ["status", "error"]] = ["error", EVIL]
    table.to_csv(tmp_path / "sweep.csv", index=False)
    _check(build_report(tmp_path / "sweep.csv", fmt="svg"))


def test_report_of_a_run_kept_without_op_rows(tmp_path):
    """``--trace summary|none`` runs have no ``ops`` rows: the report leaves out the Gantt
    chart and keeps the rest."""
    document = phone_cloud_document()
    for level in ("summary", "none"):
        result = simulate(parse_scenario(document), trace=level)
        folder = tmp_path / level
        result.write(folder, parquet=False)
        page = build_report(folder)
        assert 'id="plot-gantt"' not in page
        assert 'id="plot-energy"' in page and 'id="plot-utilisation"' in page
