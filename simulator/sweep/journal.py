"""The journal ``rows.jsonl``: one self-validating line per finished run.

A line is ``{"fingerprint": F, "hash": H, "row": ROW}``: ``F`` is the sweep's fingerprint
(:mod:`simulator.sweep.fingerprint`), ``H`` the hash of ``ROW``'s canonical JSON. Reading
checks every line: JSON, the three keys, the fingerprint, the hash, the row's fields and
their types, the point and replicate inside the sweep, no second different row for a
(point, replicate). A last line cut short (no newline: the write a kill interrupted) is
*torn*, not bad; an identical repeat of a row is harmless and skipped.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from simulator.sweep.execute import ROW_FIGURES
from simulator.sweep.fingerprint import digest

_KEYS = {"fingerprint", "hash", "row"}
_TEXT = ("status", "error", "decision", "scenario")


def plain_row(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, NaN/inf to null."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): plain_row(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_row(v) for v in value]
    return value


def _body(row: Mapping[str, Any]) -> str:
    return json.dumps(row, separators=(",", ":"), allow_nan=False)


def encode(row: Mapping[str, Any], fingerprint: str) -> str:
    """The journal line of ``row`` (with its newline)."""
    body = _body(plain_row(row))
    return f'{{"fingerprint":"{fingerprint}","hash":"{digest(body)}","row":{body}}}\n'


@dataclass(frozen=True)
class Shape:
    """What a row of this sweep looks like: its fingerprint, points and replicates."""

    fingerprint: str
    points: int
    replicates: int


def _integer(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _row_problem(row: Any, shape: Shape) -> str | None:
    """What is wrong with a row's fields, or None."""
    if not isinstance(row, dict):
        return f"'row' is {type(row).__name__}, not an object"
    for name, count in (("point", shape.points), ("replicate", shape.replicates)):
        value = row.get(name)
        if not _integer(value):
            return f"'{name}' is {value!r}, not an integer"
        if not 0 <= value < count:
            return f"{name} {value} is outside this sweep ({name}s 0 to {count - 1})"
    if not _integer(row.get("seed")):
        return f"'seed' is {row.get('seed')!r}, not an integer"
    for name in _TEXT:
        if not isinstance(row.get(name), str):
            return f"'{name}' is {row.get(name)!r}, not text"
    if row["status"] not in ("ok", "error"):
        return f"'status' is {row['status']!r}, not 'ok' or 'error'"
    for name in ROW_FIGURES:
        value = row.get(name, math.nan)
        if name not in _TEXT and (
            value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)))
        ):
            return f"'{name}' is {value!r}, not a number or null"
    return None


def line_problem(line: bytes, shape: Shape) -> tuple[str | None, Any]:
    """(what is wrong with a journal line or None, its row)."""
    try:
        entry = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"not JSON ({exc})", None
    if not isinstance(entry, dict) or set(entry) != _KEYS:
        return "not a journal line (expected an object of fingerprint, hash, row)", None
    if entry["fingerprint"] != shape.fingerprint:
        return f"a row of another sweep (fingerprint {entry['fingerprint']!r})", None
    row = entry["row"]
    try:
        altered = not isinstance(row, dict) or digest(_body(row)) != entry["hash"]
    except ValueError:  # NaN written by hand
        altered = True
    if altered:
        return "the row was altered after it was written (its hash does not match)", None
    return _row_problem(row, shape), row


@dataclass
class Scan:
    """A journal read and checked.

    Attributes
    ----------
    rows : dict
        ``(point, replicate) -> row`` of the good lines (only when rows were kept).
    done : set
        The (point, replicate) pairs of the good lines.
    bad : list of (line number, problem)
    drop : set of int
        Line numbers a repair drops (bad lines and identical repeats).
    torn_at : int or None
        Byte offset of a torn last line.
    """

    rows: dict[tuple[int, int], dict] = field(default_factory=dict)
    done: set[tuple[int, int]] = field(default_factory=set)
    bad: list[tuple[int, str]] = field(default_factory=list)
    drop: set[int] = field(default_factory=set)
    torn_at: int | None = None


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, bytes) of each line of ``path``."""
    offset = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            yield number, offset, line
            offset += len(line)


def scan(path: Path, shape: Shape, keep_rows: bool = False) -> Scan:
    """Read and check every line of the journal at ``path`` (see the module doc)."""
    out = Scan()
    first: dict[tuple[int, int], tuple[int, str]] = {}
    for number, offset, line in _lines(path):
        problem, row = line_problem(line, shape)
        if problem is not None and not line.endswith(b"\n"):
            out.torn_at = offset  # the last line, cut short
            break
        if problem is None:
            key = (row["point"], row["replicate"])
            body = _body(row)
            if key in first:
                if first[key][1] == body:
                    out.drop.add(number)  # the same row again: harmless
                    continue
                problem = (
                    f"point {key[0]} replicate {key[1]} is already on line {first[key][0]} "
                    "with other values"
                )
            else:
                first[key] = (number, body)
                out.done.add(key)
                if keep_rows:
                    out.rows[key] = row
                continue
        out.bad.append((number, problem))
        out.drop.add(number)
    return out


def rewrite_without(path: Path, drop: set[int], torn_at: int | None) -> None:
    """Rewrite the journal without the lines ``drop`` and a torn tail (to a temporary
    file renamed over it, so a kill during a repair leaves one or the other)."""
    temporary = path.with_name(path.name + ".repair")
    with temporary.open("wb") as out:
        for number, offset, line in _lines(path):
            if torn_at is not None and offset >= torn_at:
                break
            if number not in drop:
                out.write(line)
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(path)
