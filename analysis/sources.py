"""What plots read: a run folder (``socsim run``) or a sweep table (``socsim sweep``).

A sweep directory holds ``sweep.parquet`` (or ``sweep.csv``) and ``sweep.json`` (its
metadata, with ``parameters``: the swept scenario paths). The table has one row per
point × replicate: ``point``, one column per swept parameter named by its scenario
path, ``replicate``, ``seed``, ``status`` (``ok`` | ``error``), ``error``, ``decision``
and every key of the run summary (``docs/results.md``). Nothing here imports the sweep
code: the columns are the contract.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.tables import load_run
from simulator.errors import SocsimError
from simulator.output.cells import cell_columns, typed_cell

SWEEP_FILES = ("sweep.parquet", "sweep.csv")
# the sweep table's own columns, before the swept parameters' and after them
SWEEP_KEYS = ("point", "replicate", "seed", "status", "error", "decision")


@dataclass(frozen=True)
class Sweep:
    """A sweep table and what was swept.

    Attributes
    ----------
    table : DataFrame
        Every row, failed points included.
    parameters : tuple of str
        The swept scenario paths (columns of ``table``).
    metadata : dict
        ``sweep.json`` as read (empty when the table came without one).
    """

    table: pd.DataFrame
    parameters: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> pd.DataFrame:
        """The rows whose point ran (``status == "ok"``)."""
        if "status" not in self.table:
            return self.table
        return self.table[self.table["status"] == "ok"]

    def where(self, conditions: Mapping[str, str]) -> Sweep:
        """The rows where each column equals its value (given as text, as on a command line).

        A value matches a numeric column by number (``1`` matches ``1.0``), any other
        column by its text; a mapping or list by its value (``{policy: offload, node:
        edge}`` matches the cell ``{node: edge, policy: offload}``).

        Raises
        ------
        SocsimError
            An unknown column (listing the available ones), or a value no row has
            (listing the values there are).
        """
        table = self.table
        for column, text in conditions.items():
            require_columns(table, [column], "--where: the sweep table")
            values = table[column]
            if pd.api.types.is_numeric_dtype(values):
                try:
                    keep = values == float(text)
                except ValueError:
                    keep = values.astype(str) == text
            else:  # a mapping typed in any key order matches its canonical cell
                keep = values.astype(str) == typed_cell(text)
            if not keep.any():
                present = ", ".join(map(str, sorted(values.dropna().unique(), key=str)))
                raise SocsimError(f"--where {column}={text}: no row has it; values: {present}")
            table = table[keep]
        return Sweep(table, self.parameters, self.metadata)


@dataclass(frozen=True)
class Source:
    """A loaded plot source: exactly one of ``run`` (tables by name) or ``sweep``."""

    path: Path
    run: Mapping[str, pd.DataFrame] | None = None
    sweep: Sweep | None = None

    @property
    def kind(self) -> str:
        return "sweep" if self.sweep is not None else "run"

    def require_run(self) -> Mapping[str, pd.DataFrame]:
        """The run's tables by name; SocsimError when the source is a sweep."""
        if self.run is None:
            raise SocsimError(f"{self.path} is a sweep; this needs a run folder")
        return self.run

    def require_sweep(self) -> Sweep:
        """The sweep; SocsimError when the source is a run folder."""
        if self.sweep is None:
            raise SocsimError(f"{self.path} is a run folder; this needs a sweep")
        return self.sweep


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path)


def _infer_parameters(table: pd.DataFrame) -> tuple[str, ...]:
    # without sweep.json the contract's column order says it: point, <parameters>,
    # [mc_sample], replicate (a Monte Carlo sample index is not a swept parameter)
    columns = list(table.columns)
    if "point" in columns and "replicate" in columns:
        span = columns[columns.index("point") + 1 : columns.index("replicate")]
        return tuple(c for c in span if c != "mc_sample")
    return ()


def load_sweep(path: str | Path) -> Sweep:
    """Read a sweep directory, or a sweep table file (``.parquet`` / ``.csv``).

    Parquet is preferred when both are there. The swept parameters come from
    ``sweep.json`` beside the table; without it, from the columns between ``point``
    and ``replicate``.

    Raises
    ------
    SocsimError
        When the path has no sweep table, or the table lacks the contract's columns.
    """
    path = Path(path)
    if path.is_dir():
        found = [path / name for name in SWEEP_FILES if (path / name).exists()]
        if not found:
            raise SocsimError(f"{path} has no {' or '.join(SWEEP_FILES)}: is it a sweep folder?")
        table_path = found[0]
    elif path.exists() and path.suffix in (".parquet", ".csv"):
        table_path = path
    else:
        raise SocsimError(f"{path}: expected a sweep folder or a .parquet/.csv sweep table")
    table = _read_table(table_path)
    meta_path = table_path.parent / "sweep.json"
    metadata = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    parameters = tuple(metadata.get("parameters") or _infer_parameters(table))
    require_columns(table, ("point", "replicate", *parameters), f"sweep table {table_path}")
    # a table written before mapping cells were text: Parquet structs, lists as arrays
    return Sweep(cell_columns(table, parameters), parameters, metadata)


def load_source(path: str | Path) -> Source:
    """A run folder or a sweep (folder or table file), whichever ``path`` is.

    Raises
    ------
    SocsimError
        When ``path`` is neither, saying what each needs.
    """
    path = Path(path)
    if not path.exists():
        raise SocsimError(f"{path}: no such file or folder")
    if path.is_file() or any((path / name).exists() for name in SWEEP_FILES):
        return Source(path, sweep=load_sweep(path))
    try:
        return Source(path, run=load_run(path))
    except FileNotFoundError as exc:
        raise SocsimError(
            f"{path} is neither a run folder (socsim run -o DIR) nor a sweep folder "
            f"({' or '.join(SWEEP_FILES)}): {exc}"
        ) from None


def require_columns(table: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise unless ``table`` has every one of ``columns``.

    Raises
    ------
    SocsimError
        Naming the missing columns, what needed them, and the available columns.
    """
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise SocsimError(
            f"{what} has no column {', '.join(repr(c) for c in missing)}; "
            f"available: {', '.join(map(str, table.columns)) or '(none)'}"
        )


def require_rows(table: pd.DataFrame, what: str) -> None:
    """Raise when ``table`` is empty: a figure of nothing is a mistake, not a picture."""
    if table.empty:
        raise SocsimError(f"{what} is empty: nothing to plot")


def require_table(table: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """:func:`require_columns` then :func:`require_rows`."""
    require_columns(table, columns, what)
    require_rows(table, what)
