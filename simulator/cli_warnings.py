"""How the ``socsim`` command shows the library's warnings: one clean stderr line each.

The library emits :class:`simulator.errors.SocsimWarning` s through :mod:`warnings`
(so library users can filter them); inside :func:`socsim_warnings_to_stderr` they print
as ``socsim: warning: <message>`` instead of Python's file:line warning format, and every
one is shown (the library already emits each once per subject).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from simulator.errors import SocsimWarning

PREFIX = "socsim: warning: "


@contextmanager
def socsim_warnings_to_stderr() -> Iterator[None]:
    """Within the block, SocsimWarnings print as one line on stderr; others as usual."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", SocsimWarning)
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None) -> None:
            if issubclass(category, SocsimWarning):
                print(f"{PREFIX}{message}", file=sys.stderr, flush=True)
                return
            shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield
