"""Every result file socsim writes goes through here: staged, then renamed into place.

A file is written as ``.<name>.<pid>-<token>.tmp`` beside its target and renamed over it
only when complete, so a reader never sees half a file and an interrupt leaves the old
one. A folder of results (a run: tables, ``summary.json``, ``scenario.resolved.yaml``)
is staged as a whole by :func:`staged_dir`: a new folder appears in one rename with
every file in it, or not at all. Into an existing, non-empty folder (a second run into
the same ``-o``) the files are renamed one by one with ``summary.json`` last, so a
folder whose ``summary.json`` is older than its tables was cut short (within
milliseconds of renames).

Atomic against interruption and full disks, not against power loss (no ``fsync``).
A failed write raises :class:`~simulator.errors.WriteError` and leaves nothing staged.
"""

from __future__ import annotations

import csv
import io
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from simulator.errors import OutputError, WriteError
from simulator.output.text import has_carriage_return, neutralise_formulas

LAST = "summary.json"  # renamed last into an existing folder: its presence means complete


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def _write_file(path: Path, data: bytes) -> None:
    """The one place file contents reach the disk (tests inject faults here)."""
    with open(path, "xb") as handle:
        handle.write(data)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (a temporary name, then a rename).

    Raises
    ------
    WriteError
        On any operating-system error; the temporary file is removed, ``path`` untouched.
    """
    path = Path(path)
    temp = _temp_name(path)
    try:
        _write_file(temp, data)
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise WriteError(str(path), exc.strerror or str(exc)) from exc
    except BaseException:  # an interrupt mid-write leaves no temporary file behind
        temp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """:func:`write_bytes` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode("utf-8"))


def write_csv(frame: pd.DataFrame, path: str | Path, **options) -> Path:
    """``frame`` as CSV (no index), text cells a spreadsheet would run as formulas
    neutralised (:func:`~simulator.output.text.neutralise_formulas`)."""
    options.setdefault("index", False)
    safe = neutralise_formulas(frame)
    if has_carriage_return(safe):  # the csv module leaves a lone CR unquoted: a row break
        options.setdefault("quoting", csv.QUOTE_NONNUMERIC)
    return write_text(path, safe.to_csv(None, **options))


def write_parquet(frame: pd.DataFrame, path: str | Path) -> Path:
    """``frame`` as Parquet (no index).

    Raises
    ------
    OutputError
        Naming the column Parquet cannot store (an integer beyond int64, mixed types);
        nothing is written.
    """
    buffer = io.BytesIO()
    try:
        frame.to_parquet(buffer, index=False)
    except (ValueError, TypeError, OverflowError, ImportError) as exc:
        raise OutputError(
            f"cannot write {path} as Parquet: {_parquet_column(frame) or 'a column'} "
            f"cannot be stored ({str(exc).splitlines()[0]}); nothing was written"
        ) from exc
    return write_bytes(path, buffer.getvalue())


def _parquet_column(frame: pd.DataFrame) -> str | None:
    """The first column Parquet refuses, to name it in the error."""
    for name in frame.columns:
        try:
            frame[[name]].to_parquet(io.BytesIO(), index=False)
        except Exception:
            return f"column '{name}'"
    return None


@contextmanager
def staged_dir(out: str | Path) -> Iterator[Path]:
    """A temporary folder to write a set of results into, published as ``out`` on success.

    A missing or empty ``out`` is replaced by the staged folder in one rename; into a
    non-empty ``out`` the staged files are renamed one by one, ``summary.json`` last.
    On any exception (an interrupt too) the staged folder is removed and ``out`` is as
    it was.

    Raises
    ------
    WriteError
        When the staging folder cannot be created or published.
    """
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fresh = not out.exists() or (out.is_dir() and not any(out.iterdir()))
        stage = _temp_name(out) if fresh else out / _temp_name(out).name
        stage.mkdir()
    except OSError as exc:
        raise WriteError(str(out), exc.strerror or str(exc)) from exc
    try:
        yield stage
        _publish(stage, out, fresh)
    except WriteError as exc:  # name the folder asked for, not the staging name
        shutil.rmtree(stage, ignore_errors=True)
        raise WriteError(str(out), exc.reason) from exc
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _publish(stage: Path, out: Path, fresh: bool) -> None:
    try:
        if fresh:
            os.replace(stage, out)  # rename(2) replaces a missing or empty folder
            return
        names = sorted(p.name for p in stage.iterdir())
        for name in sorted(names, key=lambda n: n == LAST):
            os.replace(stage / name, out / name)
        stage.rmdir()
    except OSError as exc:
        raise WriteError(str(out), exc.strerror or str(exc)) from exc
