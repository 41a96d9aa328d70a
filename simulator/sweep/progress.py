"""A one-line progress bar on stderr: points done, rate and ETA (quiet unless a TTY)."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` (``--:--`` when unknown)."""
    if not math.isfinite(seconds):
        return "--:--"
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Progress:
    """Redraws ``[#####.....] 37/200 runs  4.1/s  ETA 0:00:40`` at most ten times a second.

    Parameters
    ----------
    total : int
        Runs in the whole sweep.
    done : int
        Runs already done (a resumed sweep); the rate counts only this session's.
    stream : TextIO or None
        Default ``sys.stderr``.
    enabled : bool or None
        None: only when ``stream`` is a terminal.
    """

    width = 30

    def __init__(
        self, total: int, done: int = 0, stream: TextIO | None = None, enabled: bool | None = None
    ):
        self.total, self.done, self.start_done = total, done, done
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self._drawn = 0.0

    def line(self, now: float) -> str:
        """The bar's text at time ``now`` (``time.monotonic``)."""
        elapsed = max(now - self.started, 1e-9)
        rate = (self.done - self.start_done) / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        return f"[{bar}] {self.done}/{self.total} runs  {rate:.3g}/s  ETA {format_duration(left)}"

    def update(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if self.enabled and (now - self._drawn >= 0.1 or self.done >= self.total):
            self._drawn = now
            self.stream.write("\r" + self.line(now))
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + self.line(time.monotonic()) + "\n")
            self.stream.flush()
