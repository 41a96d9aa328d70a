"""The tidy measurement table every calibration step reads and writes.

One row per measured thing: an operator of a model (``level = op``), a whole model
end to end (``level = model``) or a microbenchmark (``level = micro``). Times are in
seconds, work in FLOPs, traffic in bytes. Provenance (host, runtime, threads, date)
travels in a JSON file next to the CSV.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from calibration.statistic import (
    HALF_COLUMNS,
    MEAN,
    Q1,
    STATISTICS,
    statistic_column,
)
from simulator.errors import SocsimError
from simulator.graph.model import DTYPE_BYTES, OP_KINDS
from simulator.hardware.kernel_features import FEATURES, feature_column
from simulator.output import write_csv, write_text

#: Column -> what it holds. ``median_s`` and ``iqr_s`` are over ``runs`` repeated runs.
COLUMNS: Mapping[str, str] = {
    "level": "op | model | micro",
    "model": "model (or microbenchmark) name",
    "node": "node name as the runtime profiles it ('' for a whole model)",
    "kind": "socsim op kind ('' for a whole model)",
    "op_type": "the runtime's operator type (FusedConv, CONV_2D, ...)",
    "dtype": "fp32 | fp16 | int8",
    "shapes": "input shapes -> output shapes",
    "flops": "FLOPs (a multiply-add counts 2)",
    "bytes": "bytes read and written: inputs, weights, outputs",
    "median_s": "median time (s)",
    "iqr_s": "inter-quartile range of the time (s)",
    "runs": "timed runs",
    "threads": "intra-op threads",
    "parallel_fraction": "Amdahl parallel fraction p of the op (1 when not given)",
}
#: Model-name prefix of the kernel sweeps (calibration/sweeps.py): synthetic graphs of
#: isolated kernels, each followed by a reduction, unlike a network end to end.
SWEEP_PREFIX = "sweep_"
#: Optional columns: the op's predictor features (``feat_<name>``, NaN when it lacks one).
FEATURE_COLUMNS: tuple[str, ...] = tuple(feature_column(name) for name in FEATURES)
#: Optional column: 1 when the op reads only graph inputs or writes a graph output (its
#: tensors are not in the caches the way a layer's inside a network are), 0 inside.
BOUNDARY = "boundary"
OPTIONAL_COLUMNS: tuple[str, ...] = (
    Q1,
    MEAN,
    *(c for pair in HALF_COLUMNS.values() for c in pair),
    BOUNDARY,
    *FEATURE_COLUMNS,
)


LEVELS = ("op", "model", "micro")
PROVENANCE_SUFFIX = ".provenance.json"


class MeasurementError(SocsimError):
    """A measurement file is unreadable or holds an invalid value.

    Attributes
    ----------
    file : str
        The file.
    line : int or None
        1-based line of the offending row (the header is line 1).
    column : str or None
        The offending column.
    message : str
        What is wrong and what was expected.
    """

    def __init__(self, file: str, message: str, line: int | None = None, column: str | None = None):
        self.file, self.message, self.line, self.column = str(file), message, line, column
        where = self.file + (f":{line}" if line is not None else "")
        where += f": column '{column}'" if column else ""
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        return (type(self), (self.file, self.message, self.line, self.column))


@dataclass(frozen=True)
class Provenance:
    """Where and how measurements were taken."""

    date: str
    host: str
    runtime: str
    threads: int
    notes: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.threads, int) or self.threads < 1:
            raise SocsimError(f"provenance: threads must be an integer >= 1, got {self.threads!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "host": self.host,
            "runtime": self.runtime,
            "threads": self.threads,
            "notes": self.notes,
        }


def check_kind(kind: str, file: str, line: int | None, column: str = "kind") -> str:
    """``kind`` when it is a socsim op kind, else a :class:`MeasurementError`."""
    if kind not in OP_KINDS:
        from simulator.schema import nearest

        hint = nearest(kind, OP_KINDS)
        tail = f" (did you mean '{hint}'?)" if hint else ""
        raise MeasurementError(
            file, f"unknown op kind '{kind}'; valid: {', '.join(OP_KINDS)}{tail}", line, column
        )
    return kind


def check_number(
    value: Any, file: str, line: int | None, column: str, positive: bool = False
) -> float:
    """``value`` as a finite float >= 0 (> 0 with ``positive``), else a MeasurementError."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise MeasurementError(file, f"expected a number, got {value!r}", line, column) from None
    bad = not math.isfinite(number) or number < 0 or (positive and number == 0)
    if bad:
        bound = "> 0" if positive else ">= 0"
        raise MeasurementError(
            file, f"must be a finite number {bound}, got {value!r}", line, column
        )
    return number


def check_fraction(value: Any, file: str, line: int | None, column: str) -> float:
    """``value`` as a float in [0, 1], else a :class:`MeasurementError`."""
    number = check_number(value, file, line, column)
    if number > 1:
        raise MeasurementError(file, f"must be in [0, 1], got {value!r}", line, column)
    return number


def make_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A measurement table with :data:`COLUMNS` in that order, then the
    :data:`OPTIONAL_COLUMNS` that any row has."""
    rows = list(rows)
    features = [c for c in OPTIONAL_COLUMNS if any(c in row for row in rows)]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *features])
    frame["parallel_fraction"] = frame["parallel_fraction"].fillna(1.0)
    return frame.astype({"runs": "int64", "threads": "int64"}) if len(frame) else frame


def write_table(frame: pd.DataFrame, path: Path, provenance: Provenance | None = None) -> None:
    """Write the CSV (and its provenance JSON next to it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame, path, float_format="%.9g")  # staged; formula-like cells neutralised
    if provenance is not None:
        text = json.dumps(provenance.to_dict(), indent=2, sort_keys=True)
        write_text(provenance_path(path), text + "\n")


def provenance_path(path: Path) -> Path:
    return path.with_name(path.name + PROVENANCE_SUFFIX)


def read_provenance(path: Path) -> Provenance | None:
    """The provenance written next to ``path``, or None when there is none."""
    side = provenance_path(path)
    if not side.exists():
        return None
    try:
        data = json.loads(side.read_text())
        return Provenance(**data)
    except (ValueError, TypeError, SocsimError) as exc:
        raise MeasurementError(str(side), f"unreadable provenance: {exc}") from None


def read_table(path: Path, statistic: str = "median") -> pd.DataFrame:
    """Read and check a measurement table written by :func:`write_table`.

    With ``statistic = "q1"`` (``"mean"``) the ``median_s`` column holds each row's lower
    quartile ``q1_s`` (trimmed mean ``mean_s``) instead, so every later step uses it; the
    table must have that column.

    Raises
    ------
    MeasurementError
        Naming the file, line and column of a missing column, a bad level or kind, or a
        negative / non-numeric number; an unknown statistic, or ``q1`` / ``mean``
        without its column.
    """
    name = str(path)
    if statistic not in STATISTICS:
        raise MeasurementError(name, f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if not Path(path).exists():
        raise MeasurementError(name, "file not found")
    try:
        frame = pd.read_csv(
            path, dtype={"node": str, "kind": str, "shapes": str}, keep_default_na=False
        )
    except pd.errors.EmptyDataError:
        raise MeasurementError(name, "empty file: expected a header row") from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise MeasurementError(name, f"missing column(s) {missing}; expected {list(COLUMNS)}", 1)
    if frame.empty:
        raise MeasurementError(name, "no rows after the header")
    for index, row in frame.iterrows():
        line = int(index) + 2
        if row["level"] not in LEVELS:
            raise MeasurementError(
                name, f"level must be one of {LEVELS}, got {row['level']!r}", line, "level"
            )
        if row["level"] != "model":
            check_kind(row["kind"], name, line)
        if row["dtype"] not in DTYPE_BYTES:
            raise MeasurementError(
                name,
                f"dtype must be one of {tuple(DTYPE_BYTES)}, got {row['dtype']!r}",
                line,
                "dtype",
            )
        for column in ("flops", "bytes"):
            check_number(row[column], name, line, column)
        if str(row["iqr_s"]).strip().lower() not in ("", "nan"):  # empty: spread not measured
            check_number(row["iqr_s"], name, line, "iqr_s")
        check_number(row["median_s"], name, line, "median_s", positive=True)
        for column in ("runs", "threads"):
            check_number(row[column], name, line, column, positive=True)
        if not 0 <= check_number(row["parallel_fraction"], name, line, "parallel_fraction") <= 1:
            raise MeasurementError(
                name,
                f"must be in [0, 1], got {row['parallel_fraction']!r}",
                line,
                "parallel_fraction",
            )
    frame["iqr_s"] = pd.to_numeric(frame["iqr_s"], errors="coerce")  # empty: not measured
    for column in OPTIONAL_COLUMNS:
        if column in frame.columns:  # empty: the op lacks the feature / not known
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame = frame.astype({"flops": float, "bytes": float, "median_s": float, "iqr_s": float})
    source = statistic_column(statistic)
    if source != "median_s":
        if source not in frame.columns or frame[source].isna().any():
            raise MeasurementError(
                name,
                f"statistic '{statistic}' needs a '{source}' value in every row (measure again)",
            )
        frame["median_s"] = frame[source]
    return frame


def is_sweep(model: str) -> bool:
    """True for a kernel sweep's model name (:data:`SWEEP_PREFIX`)."""
    return str(model).startswith(SWEEP_PREFIX)


def network_rows(op_rows: pd.DataFrame) -> pd.DataFrame:
    """The op rows to fit: of every kind measured inside a network, those rows only.

    A kernel that reads a graph input or writes a graph output (:data:`BOUNDARY`)
    finds its tensors where the previous run left them, not in the cache its producer
    just wrote: measured on this host, a standalone ReLU of 672 x 14 x 14 took 59 µs
    between graph input and output and 32 µs between two other kernels. Fitting such
    rows predicts a network's memory-bound layers up to twice too slow. A kind with no
    in-network row keeps its boundary rows (better than no data), and a table without
    the column (measured before it existed, or imported) keeps every row.
    """
    if BOUNDARY not in op_rows.columns or op_rows.empty:
        return op_rows
    edge = op_rows[BOUNDARY].fillna(0) >= 0.5
    inside_kinds = set(op_rows.loc[~edge, "kind"])
    return op_rows[~edge | ~op_rows["kind"].isin(inside_kinds)]


def half_repeatability(op_rows: pd.DataFrame, within: float = 0.10) -> dict[str, float]:
    """Per statistic, the share of the in-network op rows (:func:`network_rows`) whose
    two halves of runs (:data:`~calibration.statistic.HALF_COLUMNS`) agree within
    ``within`` of each other; only rows with both halves, and only statistics whose
    columns the table has (empty for a table without them)."""
    rows = network_rows(op_rows[op_rows["level"] == "op"])
    out = {}
    for statistic, (first, second) in HALF_COLUMNS.items():
        if first not in rows.columns or second not in rows.columns:
            continue
        pair = rows[[first, second]].dropna()
        pair = pair[pair[first] > 0]
        if len(pair):
            out[statistic] = float(((pair[second] / pair[first] - 1).abs() <= within).mean())
    return out
