"""Issue 16 item 16: SIGINT and SIGTERM on a real ``socsim run`` mid-run.

On the old code SIGINT exited 130 silently and SIGTERM killed the process outright.
Now each ends with its own status (130, 143) and one line saying what was kept: a run
writes nothing until it is complete, so nothing partial is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from faults.output_fixtures import REPO, tiny_document, tree, write_scenario

from simulator.exitcodes import EXIT_INTERRUPTED, EXIT_TERMINATED

# imports done before "ready", so the signal lands in the command, not in start-up;
# SIGINT handled as an interactive shell leaves it: a suite started in the background
# (``pytest &``) passes SIGINT on ignored, and a process that inherits SIG_IGN rightly
# keeps ignoring it
BOOT = (
    "import signal, sys, simulator.engine, simulator.spec\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from simulator.cli import main\n"
    "print('ready', flush=True)\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _long_document() -> dict:
    """A run of minutes: 1e6 requests (the test waits well under a second)."""
    document = tiny_document()
    document["workload"][0]["count"] = 10**6
    return document


@pytest.mark.parametrize(
    ("signum", "status", "word"),
    [
        (signal.SIGINT, EXIT_INTERRUPTED, "interrupted (SIGINT)"),
        (signal.SIGTERM, EXIT_TERMINATED, "terminated (SIGTERM)"),
    ],
)
def test_a_signal_mid_run_ends_with_its_status_and_one_line(tmp_path, signum, status, word):
    scenario = write_scenario(tmp_path, _long_document())
    out = tmp_path / "out"
    argv = ["run", str(scenario), "-o", str(out), "--trace", "none"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-c", BOOT, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout.readline() == "ready\n"
        time.sleep(0.3)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == status, stderr
    assert stderr.count("\n") == 1 and word in stderr and "Traceback" not in stderr
    assert "nothing was written" in stderr and "run the same command again" in stderr
    assert stdout == "" and tree(tmp_path) == ["scenario.yaml"]


def test_ctrl_c_while_the_command_line_is_read_is_one_line_and_130(monkeypatch, capsys):
    """Start-up is lazy, so a real Ctrl-C can land in building the parser: no traceback."""
    from simulator import cli

    def interrupted_parser():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted_parser)
    assert cli.main(["run", "x.yaml"]) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "socsim: interrupted (SIGINT) before the command started; nothing was written\n"
    )
