"""A unit that omits its efficiency or power is warned about once per cause, with the
file, line, YAML path, what is assumed and how to say it (issue 21 item 4); a unit that
gives them, even as the default values, is not."""

from __future__ import annotations

import warnings

import pytest

from simulator.spec.assumptions import UnitAssumptionWarning, reset
from simulator.spec.loader import load_scenario

SCENARIO = """\
name: assumed
nodes:
  phone:
    role: device
    units:
      cpu: {kind: cpu, peak_gflops: {fp32: 10}UNIT}
models:
  net:
    ops:
      - {name: a, kind: conv, flops: 1.0e6, dtype: fp32}
workload:
  - {app: a, model: net, source: phone, arrival: {process: periodic, period_ms: 10}, count: 1}
placement: {policy: single, unit: cpu}
"""


def _load(tmp_path, unit_extra: str) -> list[str]:
    """The UnitAssumptionWarning messages of loading the scenario twice."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("UNIT", unit_extra))
    reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_scenario(path)
        load_scenario(path)  # a second load (a sweep point) does not repeat them
    reset()
    return [str(w.message) for w in caught if issubclass(w.category, UnitAssumptionWarning)]


def test_each_cause_warns_once_with_its_fix(tmp_path):
    where = f"{tmp_path / 's.yaml'}:6: nodes.phone.units.cpu: unit 'phone.cpu'"
    assert _load(tmp_path, "") == [
        f"{where}: no efficiency given: every op runs at 100% of peak_gflops; "
        "give efficiency: {default: FRACTION} (1.0 keeps peak)",
        f"{where}: no idle_w, active_w or dvfs given: it draws 0 W, so its energy is 0 J; "
        "give idle_w and active_w (0 keeps it free)",
    ]


@pytest.mark.parametrize(
    ("extra", "left"),
    [
        (", efficiency: {default: 1.0}", ["no idle_w"]),
        (", idle_w: 0", ["no efficiency"]),
        (", active_w: 2.5", ["no efficiency"]),
        (", efficiency: {default: 0.5}, idle_w: 0, active_w: 0", []),
    ],
)
def test_explicit_figures_do_not_warn(tmp_path, extra, left):
    messages = _load(tmp_path, extra)
    assert [next(c for c in left if c in m) for m in messages] == left


def test_shipped_heft_example_is_explicit():
    reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitAssumptionWarning)
        load_scenario("scenarios/examples/heft_topcuoglu.yaml")
