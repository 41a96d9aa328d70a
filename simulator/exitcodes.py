"""The exit statuses of the ``socsim`` command, one contract for every subcommand.

Scripts branch on these, so the values never change once released. The README's
Commands section, docs/cli.md and docs/security.md list them; ``tests/faults/test_exit_codes.py``
checks each from a real command.

========================  =====  ====================================================
name                      value  meaning
========================  =====  ====================================================
``EXIT_OK``               0      success (also when stdout is closed early, e.g.
                                 ``| head``: the results are written first)
``EXIT_INVALID``          1      invalid input: scenario/YAML/CLI values, an unusable
                                 output location, ``validate`` found problems
``EXIT_USAGE``            2      argparse usage error (unknown option, missing argument)
``EXIT_RUNTIME``          3      the simulation or the writing failed; the message says
                                 what was kept
``EXIT_INTERNAL``         4      an unexpected exception, i.e. a bug: one paragraph, the
                                 traceback in a file whose path is printed (on the
                                 terminal too with ``SOCSIM_TRACEBACK=1``)
``EXIT_INTERRUPTED``      130    SIGINT (Ctrl-C), 128 + 2 as shells report it
``EXIT_TERMINATED``       143    SIGTERM, 128 + 15
========================  =====  ====================================================
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
]
