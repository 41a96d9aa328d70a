"""The engine's run loop (issue 16): it ends on an empty schedule, not on a swallowed
RuntimeError, and an exception in any callback ends the run with the scenario's name and
the simulated time (the original as ``__cause__``); long runs report progress."""

from __future__ import annotations

import copy
import pickle

import pytest

from simulator.engine import simulate
from simulator.engine.dataflow import Dataflow
from simulator.errors import SimulationError
from simulator.spec import parse_scenario
from tests.conftest import small_soc_document


def _with_battery(doc: dict) -> dict:
    """A battery that does not run out: the engine then stops on its own condition."""
    doc = copy.deepcopy(doc)
    doc["nodes"]["phone"]["battery_wh"] = 1000
    return doc


@pytest.mark.parametrize("battery", [False, True])
def test_a_callback_error_names_the_scenario_and_the_time(monkeypatch, battery):
    """With a battery, a RuntimeError from a callback was swallowed by
    ``except RuntimeError: pass`` and the run ended as if it were complete."""
    doc = small_soc_document()
    scenario = parse_scenario(_with_battery(doc) if battery else doc)
    original = Dataflow._op_done

    def broken(self, payload, start_s, end_s):
        if payload[0].plan.ops[payload[1]] == "b":
            raise RuntimeError("boom")
        original(self, payload, start_s, end_s)

    monkeypatch.setattr(Dataflow, "_op_done", broken)
    with pytest.raises(SimulationError) as info:
        simulate(scenario)
    error = info.value
    assert "scenario 'small_soc'" in str(error)
    assert "RuntimeError: boom" in str(error)
    assert error.scenario == "small_soc"
    # a = 1 ms on the cpu, 100 us sync + 4 kB at 1 GB/s, b = 0.5 ms on the gpu
    assert error.time_s == pytest.approx(1e-3 + 100e-6 + 4000 / 1e9 + 0.5e-3)
    assert isinstance(error.__cause__, RuntimeError)
    copy_ = pickle.loads(pickle.dumps(error))  # sweep workers send it back
    assert (copy_.scenario, copy_.time_s, str(copy_)) == (error.scenario, error.time_s, str(error))


def test_with_a_battery_the_run_still_ends_when_the_work_is_done():
    result = simulate(parse_scenario(_with_battery(small_soc_document())))
    assert result.summary["completed"] == 1


def test_progress_is_reported_for_long_runs(monkeypatch):
    """The hook sees simulated time and request counts; reports are rate-limited."""
    import simulator.engine.loop as run

    monkeypatch.setattr(run, "PROGRESS_STEPS", 1)
    monkeypatch.setattr(run, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(run, "PROGRESS_EVERY_S", 0.0)
    doc = small_soc_document()
    doc["workload"][0]["count"] = 5
    calls = []
    result = simulate(parse_scenario(doc), progress=lambda *a: calls.append(a))
    assert result.summary["completed"] == 5
    assert calls, "no progress report"
    times = [t for t, _, _ in calls]
    assert times == sorted(times)
    assert all(0 <= done <= issued <= 5 for _, issued, done in calls)
    assert calls[-1][2] >= 4


def test_no_progress_report_in_a_short_run():
    calls = []
    simulate(parse_scenario(small_soc_document()), progress=lambda *a: calls.append(a))
    assert calls == []


def test_socsim_run_prints_progress_lines_to_stderr(capsys):
    from simulator.cli import stderr_progress

    doc = small_soc_document()
    doc["workload"][0]["count"] = 400
    report = stderr_progress(parse_scenario(doc))
    report(1.25, 200, 150)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "socsim run: simulated 1.25 s, 150 of 400 requests done\n"
