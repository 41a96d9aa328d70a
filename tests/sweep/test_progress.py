"""Sweep progress through ``tqdm.auto`` when installed, the plain bar otherwise (issue 21,
item 5). tqdm is not a dependency: the fallback is what runs here by default, and the tqdm
path is driven by a fake ``tqdm.auto`` module put in ``sys.modules``."""

from __future__ import annotations

import io
import sys
import types
from typing import ClassVar

import pytest

from simulator.sweep.progress import Progress, open_progress


class FakeTqdm:
    """Records how it was made and updated, as tqdm's own class would be."""

    made: ClassVar[list] = []

    def __init__(self, **kwargs):
        self.kwargs, self.updates, self.closed = kwargs, [], False
        FakeTqdm.made.append(self)

    def update(self, count):
        self.updates.append(count)

    def close(self):
        self.closed = True


class FakeNotebookTqdm(FakeTqdm):
    pass


FakeNotebookTqdm.__module__ = "tqdm.notebook"  # what tqdm.auto derives from in Jupyter


def _install(monkeypatch, cls):
    package, auto = types.ModuleType("tqdm"), types.ModuleType("tqdm.auto")
    auto.tqdm = cls
    package.auto = auto
    monkeypatch.setitem(sys.modules, "tqdm", package)
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    FakeTqdm.made = []


def test_without_tqdm_the_plain_bar_draws_only_on_a_terminal(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import fails, as when not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    pipe = io.StringIO()
    bar = open_progress(4, 1, stream=pipe)
    assert isinstance(bar, Progress) and not bar.enabled
    bar.update(3)
    bar.close()
    assert pipe.getvalue() == ""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    bar = open_progress(4, 1, stream=terminal)
    bar.update(3)
    bar.close()
    last = terminal.getvalue().split("\r")[-1]
    assert last.startswith("[" + "#" * 30 + "] 4/4 runs  ") and last.endswith("ETA 0:00:00\n")
    assert open_progress(4, quiet=True, stream=Terminal()).enabled is False


def test_in_a_notebook_tqdm_auto_draws_although_stderr_is_no_terminal(monkeypatch):
    _install(monkeypatch, FakeNotebookTqdm)
    bar = open_progress(10, 4, stream=io.StringIO())
    bar.update(2)
    bar.update(4)
    bar.close()
    (made,) = FakeTqdm.made
    assert made.kwargs["total"] == 10 and made.kwargs["initial"] == 4
    assert made.kwargs["disable"] is False and made.kwargs["unit"] == "run"
    assert made.updates == [2, 4] and made.closed


def test_tqdm_text_bar_stays_out_of_pipes_and_quiet_makes_none(monkeypatch):
    _install(monkeypatch, FakeTqdm)
    open_progress(3, stream=io.StringIO())
    assert FakeTqdm.made[-1].kwargs["disable"] is True  # a pipe or a log file
    quiet = open_progress(3, quiet=True, stream=io.StringIO())
    assert isinstance(quiet, Progress) and not quiet.enabled and len(FakeTqdm.made) == 1


@pytest.mark.parametrize("quiet", [False, True])
def test_a_sweep_updates_the_tqdm_bar_once_per_run(monkeypatch, tmp_path, bandwidth_sweep, quiet):
    from simulator.sweep import run_sweep

    _install(monkeypatch, FakeNotebookTqdm)
    table = run_sweep(bandwidth_sweep, tmp_path / "out", quiet=quiet)
    if quiet:
        assert FakeTqdm.made == []
        return
    (made,) = FakeTqdm.made
    assert made.kwargs["total"] == len(table) and sum(made.updates) == len(table)
    assert made.closed
