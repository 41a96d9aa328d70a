"""The sweep folder: metadata, an append-only journal of rows, the final table, a lock.

``<out>/sweep.json`` describes the sweep (spec, paths, points, the fingerprint of what the
rows depend on: :mod:`simulator.sweep.fingerprint`); ``<out>/rows.jsonl`` receives every
row the moment it arrives (one self-validating line each, :mod:`simulator.sweep.journal`,
flushed), so an interrupted sweep loses nothing and a rerun runs only what is missing;
when every row is in, ``sweep.csv`` (and ``sweep.parquet`` when pyarrow imports) hold the
table sorted by point and replicate. ``<out>/sweep.lock`` is held (``flock``) by the one
process writing into the folder; the OS releases it when that process dies.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.errors import SocsimError
from simulator.output import write_csv, write_parquet
from simulator.output.cells import cell_columns
from simulator.schema import UNBOUNDED
from simulator.sweep.fingerprint import differences
from simulator.sweep.journal import Shape, encode, plain_row, rewrite_without, scan

if sys.platform == "win32":  # no POSIX locks: a sweep folder is not locked (docs/sweeps.md)
    fcntl = None
else:
    import fcntl

META, JOURNAL, CSV, PARQUET, LOCK = (
    "sweep.json",
    "rows.jsonl",
    "sweep.csv",
    "sweep.parquet",
    "sweep.lock",
)
#: bad journal lines a message lists before "and N more"
_SHOWN = 10


class SweepFolderError(SocsimError):
    """A sweep folder cannot be used as asked: it holds another sweep, a damaged file, or
    another sweep is writing into it. Nothing has run; the folder is left as it was."""


class SweepBusyError(SweepFolderError):
    """Another process holds the folder's lock (``sweep.lock``)."""


class SweepJournalError(SweepFolderError):
    """Lines of ``rows.jsonl`` that are not rows of this sweep.

    Attributes
    ----------
    path : Path
        The journal.
    bad : list of (int, str)
        Line number and what is wrong with it.
    """

    def __init__(self, path: Path, bad: Sequence[tuple[int, str]]):
        self.path, self.bad = path, list(bad)
        shown = "".join(f"\n  line {n}: {problem}" for n, problem in self.bad[:_SHOWN])
        more = f"\n  ... and {len(self.bad) - _SHOWN} more" if len(self.bad) > _SHOWN else ""
        super().__init__(
            f"{path}: {len(self.bad)} bad line(s); nothing was run:{shown}{more}\n"
            "Add --repair to drop these lines and run their points again (the good rows "
            "are kept), or --restart to discard every row of the folder."
        )

    def __reduce__(self):
        return (type(self), (self.path, self.bad))


@dataclass(frozen=True)
class Begun:
    """A sweep folder opened for writing: the runs done, and notes for the user."""

    done: frozenset[tuple[int, int]]
    notes: tuple[str, ...] = ()


def _choices(out: Path) -> str:
    return (
        f"Choose another folder with -o, or add --restart to discard the rows in {out} "
        "and run this sweep there."
    )


def _read_meta(path: Path, out: Path) -> dict[str, Any]:
    """``sweep.json`` as a mapping with a fingerprint, or a clear error."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SweepFolderError(
            f"{path} is not readable sweep metadata ({exc}). {_choices(out)}"
        ) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("fingerprint"), str):
        raise SweepFolderError(f"{path} is not sweep metadata (no fingerprint). {_choices(out)}")
    for key in ("points", "replicates"):
        if not isinstance(meta.get(key), int) or isinstance(meta.get(key), bool):
            raise SweepFolderError(f"{path}: '{key}' is not an integer. {_choices(out)}")
    return meta


def _same_meta(old: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """Does ``sweep.json`` (read as ``old``) already say what ``meta`` says, with every
    point's values? (The fingerprint fixes the points and their seeds.)"""
    head = {key: value for key, value in old.items() if key != "point_values"}
    points = old.get("point_values")
    return (
        isinstance(points, list)
        and len(points) == meta["points"]
        and head == json.loads(json.dumps(plain_row(dict(meta))))
    )


def write_meta(path: Path, meta: Mapping[str, Any], point_values: Iterable[Mapping]) -> None:
    """Write ``sweep.json`` with ``point_values`` streamed one point at a time (a big
    sweep's list is never held whole), to a temporary name renamed when complete."""
    head = json.dumps(plain_row(dict(meta)), indent=2)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(head[:-2] + ',\n  "point_values": [')
        for index, values in enumerate(point_values):
            handle.write(("," if index else "") + "\n    " + json.dumps(plain_row(values)))
        handle.write("\n  ]\n}\n")
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)


class SweepStore:
    """Reads and writes one sweep folder, holding its lock from :meth:`begin` to
    :meth:`close`.

    Parameters
    ----------
    out_dir : str or Path
        Created if missing.
    """

    def __init__(self, out_dir: str | Path):
        self.out = Path(out_dir)
        self._lock_fd: int | None = None
        self.fingerprint = ""

    def _file(self, name: str) -> Path:
        """``out/name``, refused when something other than a file sits there."""
        path = self.out / name
        if path.exists() and not path.is_file():
            raise SweepFolderError(
                f"{path} is not a file (a folder or a device); move it away or choose "
                "another folder with -o"
            )
        return path

    def lock(self) -> None:
        """Take the folder's lock, released by :meth:`close` or by the OS when this
        process dies (``fcntl.flock``).

        Raises
        ------
        SweepBusyError
            Naming the process that holds it.
        """
        if fcntl is None or self._lock_fd is not None:
            return
        fd = os.open(self._file(LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise SweepBusyError(
                f"another sweep (process {holder}) is writing into {self.out}; wait for it "
                "to end or choose another folder with -o"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        """Release the lock (the lock file stays: removing it would race a new taker)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the last descriptor releases the flock
            self._lock_fd = None

    def begin(
        self,
        meta: Mapping[str, Any],
        point_values: Iterable[Mapping] = (),
        restart: bool = False,
        repair: bool = False,
    ) -> Begun:
        """Start or resume under the folder's lock: check the folder, write ``sweep.json``,
        return the (point, replicate) pairs done.

        ``restart`` discards the rows of whatever sweep the folder holds; ``repair`` drops
        bad journal lines (their points run again). A torn last line is dropped with a note.

        Raises
        ------
        SweepFolderError
            The folder holds another sweep (what differs is named), or its ``sweep.json``
            is damaged, or a file name is taken by a folder.
        SweepBusyError
            Another sweep holds the lock.
        SweepJournalError
            Bad journal lines (without ``repair``).
        """
        if self.out.exists() and not self.out.is_dir():
            raise SweepFolderError(f"{self.out} is a file, not a folder; choose another -o")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SweepFolderError(f"cannot create the sweep folder {self.out}: {exc}") from None
        self.lock()
        self.fingerprint = meta["fingerprint"]
        meta_path, journal = self._file(META), self._file(JOURNAL)
        notes: list[str] = []
        old: dict[str, Any] | None = None
        if restart:
            gone = [p.name for p in (journal, self._file(CSV), self._file(PARQUET)) if p.exists()]
            for name in gone:
                (self.out / name).unlink()
            if gone:
                notes.append(f"--restart: discarded {', '.join(gone)} in {self.out}")
        elif meta_path.exists():
            old = _read_meta(meta_path, self.out)
            if old["fingerprint"] != meta["fingerprint"]:
                parts = old.get("fingerprint_parts")
                what = "; ".join(differences(parts, meta["fingerprint_parts"]))
                raise SweepFolderError(
                    f"{self.out} holds another sweep ({what}). Its rows are kept; nothing "
                    f"was run. {_choices(self.out)}"
                )
        elif journal.exists():
            raise SweepFolderError(
                f"{journal} has no {META} beside it, so its rows cannot be checked. "
                f"{_choices(self.out)}"
            )
        done: frozenset[tuple[int, int]] = frozenset()
        if journal.exists():
            shape = Shape(meta["fingerprint"], meta["points"], meta["replicates"])
            found = scan(journal, shape)
            if found.bad and not repair:
                raise SweepJournalError(journal, found.bad)
            if found.bad:
                lines = ", ".join(str(n) for n, _ in found.bad)
                notes.append(
                    f"--repair: dropped {len(found.bad)} bad line(s) of {journal} "
                    f"(line(s) {lines}); their points run again"
                )
            if found.torn_at is not None:
                notes.append(
                    f"dropped the torn last line of {journal} (a write cut short "
                    "by a kill); its run is done again"
                )
            if found.bad:
                rewrite_without(journal, found.drop, found.torn_at)
            elif found.torn_at is not None:
                os.truncate(journal, found.torn_at)
            done = frozenset(found.done)
        if old is None or not _same_meta(old, meta):  # a resume leaves the points alone
            write_meta(meta_path, meta, point_values)
        return Begun(done, tuple(notes))

    def rows(self) -> list[dict[str, Any]]:
        """The journal's rows, checked (a torn last line is skipped).

        Raises
        ------
        SweepJournalError
            For a bad line.
        """
        path = self._file(JOURNAL)
        if not path.exists():
            return []
        meta = _read_meta(self.out / META, self.out)
        shape = Shape(meta["fingerprint"], meta["points"], meta["replicates"])
        found = scan(path, shape, keep_rows=True)
        if found.bad:
            raise SweepJournalError(path, found.bad)
        return list(found.rows.values())

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add rows to the journal, flushed to the OS before returning."""
        text = "".join(encode(r, self.fingerprint) for r in rows)
        path = self.out / JOURNAL
        with path.open("a", encoding="utf-8") as handle:
            if handle.tell() and not _ends_with_newline(path):
                handle.write("\n")  # a last line complete but for its newline
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    def finish(self, columns: Sequence[str]) -> pd.DataFrame:
        """Write ``sweep.csv`` (and ``sweep.parquet``) sorted by point and replicate."""
        table = rows_table(self.rows(), columns)
        write_csv(table, self.out / CSV)  # staged; formula-like text cells neutralised
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return table
        write_parquet(table, self.out / PARQUET)
        return table


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def rows_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """Rows as the tidy table: the given column order, sorted, one row per (point, replicate).

    A mapping or list a parameter took is its canonical text
    (:func:`~simulator.output.cells.cell_value`), the same in CSV and Parquet."""
    table = cell_columns(pd.DataFrame(list(rows), columns=list(columns)))
    for name in columns[1 : columns.index("replicate")]:  # the swept parameters
        table[name] = _unbounded_as_inf(table[name])
    table = table.drop_duplicates(["point", "replicate"], keep="last")
    table = table.sort_values(["point", "replicate"], kind="stable").reset_index(drop=True)
    for name in ("point", "replicate", "seed"):
        table[name] = table[name].astype("int64")
    for name in ("status", "error", "decision"):
        table[name] = table[name].fillna("").astype(str)
    for name in columns[columns.index("decision") + 1 :]:
        if name != "scenario":  # JSON null -> NaN; whole-number columns stay integers
            table[name] = pd.to_numeric(table[name])
    return table


def _unbounded_as_inf(column: pd.Series) -> pd.Series:
    """A swept figure that took ``unbounded`` among numbers (docs/scenario-format.md) as
    floats with ``inf`` for it: the column stays numeric (Parquet stores no column of
    numbers and text), the journal keeps the word (its JSON has no infinity)."""
    values = column.tolist()
    if UNBOUNDED not in values or not all(
        v == UNBOUNDED or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values
    ):
        return column
    return pd.Series([math.inf if v == UNBOUNDED else float(v) for v in values], index=column.index)


def load_sweep_table(path: str | Path) -> pd.DataFrame:
    """The tidy table of a sweep: one row per point × replicate.

    Parameters
    ----------
    path : str or Path
        A sweep directory, or its ``sweep.parquet`` / ``sweep.csv``. For a directory
        whose sweep has not finished, the rows done so far (from the journal).

    Returns
    -------
    DataFrame
        ``point``, one column per swept path, ``replicate, seed, status, error,
        decision`` and the run summary's keys (docs/sweeps.md).

    Raises
    ------
    SocsimError
        When ``path`` holds no sweep.
    """
    path = Path(path)
    if path.is_dir():
        for name in (PARQUET, CSV):
            if (path / name).exists():
                return load_sweep_table(path / name)
        if (path / META).exists():
            meta = _read_meta(path / META, path)
            if not isinstance(meta.get("columns"), list):
                raise SweepFolderError(f"{path / META}: 'columns' is not a list")
            return rows_table(SweepStore(path).rows(), meta["columns"])
        raise SocsimError(f"{path} holds no sweep ({META}, {CSV} or {PARQUET})")
    if path.suffix == ".parquet":
        return cell_columns(pd.read_parquet(path))  # a table written before: struct cells
    if path.suffix == ".csv":
        table = pd.read_csv(path)
        for name in ("status", "error", "decision"):  # an empty cell reads as NaN
            table[name] = table[name].astype(object).where(table[name].notna(), "").astype(str)
        return table
    raise SocsimError(f"{path} is not a sweep table (.parquet or .csv) or directory")
