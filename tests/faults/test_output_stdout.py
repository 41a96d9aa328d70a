"""Issue 16 item 4: a closed or full stdout never loses results.

On the old code ``socsim run X -o D | head -1`` exited 0 without writing D (the summary
was printed before the tables were written), and ``> /dev/full`` gave a traceback and no
files. Now the results are written first; a reader that stops early (EPIPE) is success
(exit 0, as ``| head`` expects); a stdout that refuses the text is exit 3, one line.
"""

from __future__ import annotations

import errno
import io
import sys

import pytest
from faults.output_fixtures import socsim, tiny_document, tree, write_scenario

from simulator.cli import main
from simulator.exitcodes import EXIT_OK, EXIT_RUNTIME


class _Refusing(io.StringIO):
    def __init__(self, error: OSError):
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), EXIT_OK),
        (OSError(errno.ENOSPC, "No space left on device"), EXIT_RUNTIME),
        (OSError(errno.EIO, "Input/output error"), EXIT_RUNTIME),
    ],
)
def test_results_are_written_before_stdout_can_fail(tmp_path, monkeypatch, error, status):
    scenario = write_scenario(tmp_path, tiny_document())
    monkeypatch.setattr(sys, "stdout", _Refusing(error))
    monkeypatch.setattr(sys, "stderr", errors := io.StringIO())
    monkeypatch.setattr("simulator.cli_outcome._silence_stdout", lambda: None)
    assert main(["run", str(scenario), "-o", str(tmp_path / "out")]) == status
    assert "summary.json" in tree(tmp_path / "out") and "scenario.resolved.yaml" in tree(
        tmp_path / "out"
    )
    if status == EXIT_OK:
        assert errors.getvalue() == ""
    else:
        assert errors.getvalue().count("\n") == 1 and "results are complete in" in errors.getvalue()


def test_a_real_closed_pipe_and_a_real_full_device(tmp_path):
    scenario = write_scenario(tmp_path, tiny_document())
    status, err = socsim("run", str(scenario), "-o", str(tmp_path / "piped"), close_stdout=True)
    assert (status, err) == (EXIT_OK, "")
    assert "summary.json" in tree(tmp_path / "piped")
    with open("/dev/full", "w") as full:
        status, err = socsim("run", str(scenario), "-o", str(tmp_path / "full"), stdout=full)
    assert status == EXIT_RUNTIME
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert "summary.json" in tree(tmp_path / "full")
