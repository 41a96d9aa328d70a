"""``-q`` / ``-v`` of every ``socsim`` command: the ``socsim`` logger's level and handler.

The library logs through ``logging.getLogger("socsim.<part>")`` (which preset files a
scenario included, which placement each app got) and stays silent unless its user
configures logging; the command line does that here, one line per record on stderr as
``socsim: <message>``. Verbosity and what it shows:

=========  ===========  ===============================================================
option     level        shown on stderr
=========  ===========  ===============================================================
``-q``     ERROR        errors only, no progress (socsim warnings still show: they go
                        through :mod:`warnings`, :mod:`simulator.cli_warnings`; so do a
                        sweep's notes on rows it discarded or repaired)
(none)     WARNING      also progress
``-v``     INFO         also the preset files loaded and each app's placement
``-vv``    DEBUG        also every preset taken from each file
=========  ===========  ===============================================================
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LOGGER = "socsim"


class _StderrHandler(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (tests and callers may replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError):  # stderr gone: the exit status is all that is left
            print(self.format(record), file=sys.stderr, flush=True)


def level_of(quiet: bool, verbose: int) -> int:
    """The ``socsim`` logger's level for ``-q`` and the count of ``-v``."""
    if quiet:
        return logging.ERROR
    return {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)


def add_verbosity_options(parser: argparse.ArgumentParser) -> None:
    """``-q/--quiet`` and ``-v/--verbose`` (repeatable) on one subcommand."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q", "--quiet", action="store_true", help="errors and socsim warnings only: no progress"
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="also say which preset files were loaded and each app's placement (-vv: more)",
    )


@contextmanager
def socsim_logging(args: argparse.Namespace) -> Iterator[logging.Logger]:
    """While inside, the ``socsim`` logger prints at the level ``args`` asks for; its level,
    handlers and propagation are restored after."""
    logger = logging.getLogger(LOGGER)
    saved = (logger.level, list(logger.handlers), logger.propagate)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("socsim: %(message)s"))
    logger.handlers = [handler]
    logger.setLevel(level_of(getattr(args, "quiet", False), getattr(args, "verbose", 0)))
    logger.propagate = False
    try:
        yield logger
    finally:
        logger.setLevel(saved[0])
        logger.handlers = saved[1]
        logger.propagate = saved[2]
