"""Small scenarios and helpers of the output-fault tests (tests/faults/test_output_*.py,
test_signals.py, test_exit_codes.py)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from conftest import phone_cloud_document

REPO = Path(__file__).resolve().parents[2]


def tiny_document(**changes) -> dict:
    """The phone/cloud scenario of tests/conftest.py, two requests (a run takes ~50 ms)."""
    document = copy.deepcopy(phone_cloud_document())
    document["workload"][0]["count"] = 2
    document.update(changes)
    return document


def write_scenario(folder: Path, document: dict, name: str = "scenario.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return path


def tree(folder: Path) -> list[str]:
    """Every path under ``folder``, relative, sorted (hidden temporary names included)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[bool]:
    """Mount a tmpfs with ``options`` on the new folder ``folder`` while inside; yields
    whether the mount worked (it needs root)."""
    folder.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)]
    mounted = subprocess.run(command, capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)


def socsim_process(*args: str, **options) -> subprocess.Popen:
    """``socsim ARGS`` started as a real process running this worktree's code."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **options.pop("env", {})}
    command = [sys.executable, "-c", "import sys; from simulator.cli import main; "
               "sys.exit(main())", *args]  # fmt: skip
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(command, env=env, text=True, **options)


def socsim(*args: str, close_stdout: bool = False, **options) -> tuple[int, str]:
    """Run ``socsim ARGS`` to the end; (exit status, stderr). ``close_stdout``: the
    reader of its stdout goes away at once, as ``| head -0`` would."""
    if close_stdout:
        options["stdout"] = subprocess.PIPE
    options.setdefault("stdout", subprocess.DEVNULL)
    with socsim_process(*args, **options) as process:
        if close_stdout:
            process.stdout.close()
        _, err = process.communicate(timeout=120)
    return process.returncode, err
