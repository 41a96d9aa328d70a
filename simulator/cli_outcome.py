"""How a ``socsim`` command ends: every outcome becomes one exit status and at most one
paragraph on stderr (:mod:`simulator.exitcodes`).

A command's handler may set ``args.kept`` to say what is on disk (e.g. "the results are
complete in runs/x/"); interrupts, failures and bugs repeat it, so the user knows what
survived and how to resume. Until a handler says otherwise nothing was written: results
are staged and appear only when complete (:mod:`simulator.output.atomic`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from simulator.errors import SocsimError
from simulator.exitcodes import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_TERMINATED,
)

NOTHING_KEPT = "nothing was written (results appear only when complete); run the same command again"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Python runs like Ctrl-C so every ``finally`` and every
    ``except KeyboardInterrupt`` clean-up (sweep pools, staged folders) runs too."""


@contextmanager
def sigterm_as_exception() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` in this process (not in forked
    workers, which keep the default action); the previous handler is restored after."""
    if sys.platform == "win32" or signal.getsignal(signal.SIGTERM) is None:
        yield
        return
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:  # a forked worker: die as SIGTERM asks
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def quiet_unraisable_memory_errors() -> Iterator[None]:
    """Once memory ran out, every generator and ``__del__`` torn down may fail again and
    print "Exception ignored ..." — thousands of lines burying the one message. Those
    repeats are dropped; other unraisable errors print as usual."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(getattr(unraisable, "exc_value", None), MemoryError):
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _say(command: str, text: str) -> None:
    with contextlib.suppress(OSError):  # stderr gone too: the exit status is all that is left
        prefix = f"socsim {command}" if command else "socsim"
        print(f"{prefix}: {text}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


class _WatchedStream:
    """stdout as it was, remembering the OSError it raised (a closed pipe, a full disk),
    so that error is told apart from any other OSError of the command."""

    def __init__(self, stream):
        self._stream = stream
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self.error = exc
            raise

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def watched_stdout() -> Iterator[_WatchedStream]:
    """sys.stdout replaced by a :class:`_WatchedStream` while inside."""
    original = sys.stdout
    sys.stdout = watched = _WatchedStream(original)
    try:
        yield watched
    finally:
        sys.stdout = original


def _save_traceback(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc))
    if os.environ.get("SOCSIM_TRACEBACK") == "1":
        print(text, file=sys.stderr)
    try:
        handle, path = tempfile.mkstemp(prefix="socsim-traceback-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError:
        return "(could not be saved: set SOCSIM_TRACEBACK=1 to print it)"
    return path


def interrupted_before_start() -> int:
    """Say that SIGINT came while the command line was being read; return 130."""
    _say("", "interrupted (SIGINT) before the command started; nothing was written")
    return EXIT_INTERRUPTED


#: OSError numbers of a machine that cannot take the output (a full disk or quota, a
#: read-only file system): the environment's failure, not a bug, wherever it is raised.
FULL_OR_READ_ONLY: frozenset[int] = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EROFS") if hasattr(errno, name)
)


def run_command(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``handler(args)`` and turn how it ended into an exit status and one paragraph.

    Returns
    -------
    int
        The handler's status, or: a :class:`SocsimError`'s ``exit_status`` (1 invalid
        input, 3 a failure while running or writing); 0 when stdout was closed by its
        reader (``| head``: the results were written before anything was printed); 3
        when stdout refused the output (``> /dev/full``); 130 on SIGINT, 143 on SIGTERM;
        3 when memory ran out or a disk is full or read-only (:data:`FULL_OR_READ_ONLY`,
        wherever it is raised); 4 for any other exception (a bug; traceback saved).
    """
    command = getattr(args, "command", "") or ""
    args.kept = NOTHING_KEPT
    with sigterm_as_exception(), quiet_unraisable_memory_errors(), watched_stdout() as out:
        try:
            status = handler(args)
            out.flush()  # a full disk behind stdout shows here, while we can still say so
            return status
        except SocsimError as exc:
            kept = f"; {args.kept}" if exc.exit_status == EXIT_RUNTIME else ""
            _say(command, f"error: {exc}{kept}")
            return exc.exit_status
        except Terminated:
            _say(command, f"terminated (SIGTERM); {args.kept}")
            return EXIT_TERMINATED
        except KeyboardInterrupt:
            _say(command, f"interrupted (SIGINT); {args.kept}")
            return EXIT_INTERRUPTED
        except MemoryError:
            _say(
                command,
                f"out of memory; {args.kept}. Lower the scenario's size (requests, "
                "duration, trace level: --trace none keeps memory bounded) or free memory.",
            )
            return EXIT_RUNTIME
        except OSError as exc:
            if out.error is not exc and exc.errno in FULL_OR_READ_ONLY:
                where = f" writing {exc.filename}" if exc.filename else ""
                _say(
                    command,
                    f"error: {exc.strerror or exc}{where}; {args.kept}. Free space on that "
                    "disk (or write elsewhere: -o DIR) and run the same command again.",
                )
                return EXIT_RUNTIME
            if out.error is not exc:
                return _internal(command, exc, args)
            _silence_stdout()
            if exc.errno == errno.EPIPE:  # the reader stopped reading (| head): fine
                return EXIT_OK
            _say(
                command,
                f"could not print to standard output ({exc.strerror or exc}); {args.kept}",
            )
            return EXIT_RUNTIME
        except Exception as exc:
            return _internal(command, exc, args)


def _internal(command: str, exc: BaseException, args: argparse.Namespace) -> int:
    path = _save_traceback(exc)
    _say(
        command,
        f"internal error: {type(exc).__name__}: {exc}. This is a bug in socsim, not in your "
        f"input; {args.kept}. The traceback is in {path} (SOCSIM_TRACEBACK=1 prints it "
        "here); please report it with the command and scenario.",
    )
    return EXIT_INTERNAL
