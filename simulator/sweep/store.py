"""The sweep directory: metadata, an append-only journal of rows, and the final table.

``<out>/sweep.json`` describes the sweep (spec, paths, points, a fingerprint of every
point's values and seed); ``<out>/rows.jsonl`` receives every row the moment it arrives
(one JSON object per line, flushed), so an interrupted sweep loses nothing and a rerun
runs only what is missing; when every row is in, ``sweep.csv`` (and ``sweep.parquet``
when pyarrow imports) hold the table sorted by point and replicate.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.errors import SocsimError
from simulator.output import write_csv, write_parquet

META, JOURNAL, CSV, PARQUET = "sweep.json", "rows.jsonl", "sweep.csv", "sweep.parquet"


def _plain(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, NaN/inf to null."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def fingerprint(points: Sequence[Mapping[str, Any]], seeds: Sequence[int], replicates: int) -> str:
    """A hash of what a sweep runs: its points' values, seeds and the replicate count."""
    text = json.dumps([_plain(dict(p)) for p in points] + list(seeds) + [replicates])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class SweepStore:
    """Reads and writes one sweep directory.

    Parameters
    ----------
    out_dir : str or Path
        Created if missing.
    """

    def __init__(self, out_dir: str | Path):
        self.out = Path(out_dir)

    def begin(self, meta: Mapping[str, Any]) -> set[tuple[int, int]]:
        """Start or resume: write ``sweep.json``; return the (point, replicate) pairs done.

        Raises
        ------
        SocsimError
            When the directory holds a different sweep (another fingerprint).
        """
        self.out.mkdir(parents=True, exist_ok=True)
        meta_path = self.out / META
        if meta_path.exists():
            old = json.loads(meta_path.read_text())
            if old.get("fingerprint") != meta["fingerprint"]:
                raise SocsimError(
                    f"{self.out} holds another sweep (different points or seeds); "
                    "give a new output folder or delete it"
                )
        meta_path.write_text(json.dumps(_plain(dict(meta)), indent=2) + "\n")
        return {(int(r["point"]), int(r["replicate"])) for r in self.rows()}

    def rows(self) -> list[dict[str, Any]]:
        """The journal's rows (a line cut short by an interrupt is ignored)."""
        path = self.out / JOURNAL
        if not path.exists():
            return []
        rows = []
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # the last write was interrupted
                    continue
        return rows

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add rows to the journal, flushed to the OS before returning."""
        text = "".join(json.dumps(_plain(dict(r))) + "\n" for r in rows)
        path = self.out / JOURNAL
        with path.open("a", encoding="utf-8") as handle:
            if handle.tell() and not _ends_with_newline(path):
                handle.write("\n")  # after a line cut short, start a fresh one
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
    """Rows as the tidy table: the given column order, sorted, one row per (point, replicate)."""
    table = pd.DataFrame(list(rows), columns=list(columns))
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
            meta = json.loads((path / META).read_text())
            return rows_table(SweepStore(path).rows(), meta["columns"])
        raise SocsimError(f"{path} holds no sweep ({META}, {CSV} or {PARQUET})")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        table = pd.read_csv(path)
        for name in ("status", "error", "decision"):  # an empty cell reads as NaN
            table[name] = table[name].astype(object).where(table[name].notna(), "").astype(str)
        return table
    raise SocsimError(f"{path} is not a sweep table (.parquet or .csv) or directory")
