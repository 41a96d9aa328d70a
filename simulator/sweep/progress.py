"""Progress of a sweep: ``tqdm.auto`` when installed, else a one-line bar on stderr.

:func:`open_progress` picks the bar. With tqdm installed, ``tqdm.auto`` draws a widget in
a Jupyter notebook (where stderr is not a terminal, so the plain bar stays off) and a text
bar on a terminal; without tqdm, :class:`Progress` draws on a terminal only. Both are off
when asked to be quiet, and neither draws into a pipe or a log file.
"""

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


class _TqdmBar:
    """A ``tqdm.auto`` bar behind the :class:`Progress` interface (``update``, ``close``)."""

    def __init__(self, bar):
        self.bar = bar

    def update(self, count: int = 1) -> None:
        self.bar.update(count)

    def close(self) -> None:
        self.bar.close()


def _tqdm_class():
    """``tqdm.auto.tqdm``, or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _is_notebook_bar(cls: type) -> bool:
    return any(getattr(c, "__module__", "") == "tqdm.notebook" for c in getattr(cls, "__mro__", ()))


def open_progress(
    total: int, done: int = 0, quiet: bool = False, stream: TextIO | None = None
) -> Progress | _TqdmBar:
    """The progress bar of a sweep of ``total`` runs, ``done`` of them already finished.

    ``tqdm.auto`` when it imports, drawn in a notebook (its widget class) or on a terminal
    ``stream``; otherwise :class:`Progress`, drawn on a terminal only. ``quiet``: no bar.
    """
    stream = stream or sys.stderr
    tqdm = None if quiet else _tqdm_class()
    if tqdm is None:
        return Progress(total, done, stream, enabled=False if quiet else None)
    # inside a Jupyter kernel (whose stderr is no TTY) tqdm.auto derives from tqdm.notebook's
    shown = _is_notebook_bar(tqdm) or stream.isatty()
    return _TqdmBar(
        tqdm(total=total, initial=done, unit="run", desc="sweep", file=stream, disable=not shown)
    )
