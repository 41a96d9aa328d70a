"""Shared pieces of the sweep fault tests: a small sweep and an injected crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sweep.conftest import write_sweep

from simulator.sweep.store import JOURNAL, SweepStore

ROOT = Path(__file__).resolve().parents[2]
BANDWIDTH = "links.uplink.bandwidth_mbps"


def small_sweep(folder: Path, **changes) -> Path:
    """Four uplink bandwidths x two replicates (eight runs), serial executor."""
    folder.mkdir(parents=True, exist_ok=True)
    sweep = {
        "parameters": {BANDWIDTH: [1, 10, 100, 1000]},
        "replicates": 2,
        "executor": {"name": "serial"},
    }
    return write_sweep(folder, sweep, **changes)


class CrashError(Exception):
    """Stands for a kill: the process stops between two journal writes."""


def crash_after(monkeypatch, writes: int, torn: float | None = None) -> None:
    """Make the sweep stop after ``writes`` journal appends; with ``torn`` in (0, 1), the
    next append writes that fraction of its text first (a write cut short)."""
    real = SweepStore.append
    count = {"n": 0}

    def append(self, rows):
        if count["n"] == writes:
            if torn is not None:
                from simulator.sweep.journal import encode

                text = "".join(encode(r, self.fingerprint) for r in rows)
                with (self.out / JOURNAL).open("a", encoding="utf-8") as handle:
                    handle.write(text[: max(1, int(len(text) * torn))])
            raise CrashError
        count["n"] += 1
        real(self, rows)

    monkeypatch.setattr(SweepStore, "append", append)


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def socsim(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """Run ``socsim`` (this worktree's code) in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "simulator.cli", *args],
        env=env(),
        capture_output=True,
        text=True,
        **kwargs,
    )
