"""CSV files of numeric rows read at load: bandwidth traces, position traces."""

from __future__ import annotations

import math
from typing import Any

from simulator.errors import SocsimError
from simulator.limits import MAX_HORIZON_S, MAX_TRACE_ROWS
from simulator.schema import Context, Loc, Schema
from simulator.spec.paths import naming_dir, read_user_file, user_dirs

MEGA = 1e6
#: Largest bandwidth trace file read, bytes (a day at 1 ms steps is ~1e9: use coarser steps).
MAX_TRACE_BYTES = 100_000_000


class TraceFile(Schema):
    """A CSV file of ``time_s,bandwidth_mbps`` rows (a header line is allowed), read at
    load; the path is relative to the file that names it.

    Other columns (a position trace: ``time_s,x_m,y_m``) are given as ``columns``, with
    the factor each is multiplied by to reach SI and whether it may be negative.
    """

    def __init__(
        self,
        columns: tuple[str, ...] = ("time_s", "bandwidth_mbps"),
        scales: tuple[float, ...] = (1.0, MEGA),
        what: str = "bandwidth trace",
        signed: bool = False,
    ):
        self.columns, self.scales, self.what, self.signed = columns, scales, what, signed

    def describe(self) -> str:
        return f"the path of a CSV file with columns {', '.join(self.columns)}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, str) or not value:
            return ctx.problem(loc, f"expected {self.describe()}")
        base = naming_dir(loc, ctx)
        try:
            path, raw = read_user_file(value, base, user_dirs(ctx), MAX_TRACE_BYTES)
            lines = raw.decode("utf-8").splitlines()
        except SocsimError as exc:
            return ctx.problem(loc, str(exc))
        except (OSError, UnicodeDecodeError) as exc:
            return ctx.problem(loc, f"cannot read {self.what} {base / value}: {exc}")
        n = len(self.columns)
        header = ",".join(self.columns)
        count = {2: "two", 3: "three"}.get(n, str(n))
        rows: list[tuple[float, ...]] = []
        for number, line in enumerate(lines, start=1):
            if len(rows) >= MAX_TRACE_ROWS:
                return ctx.problem(
                    loc, f"{path}: more than {MAX_TRACE_ROWS:,} rows (MAX_TRACE_ROWS)"
                )
            cells = [c.strip() for c in line.split(",")]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                row = tuple(float(c) for c in cells[:n])
                if len(row) < n:
                    raise IndexError
            except (ValueError, IndexError):
                if not rows and number == 1:
                    if len(cells) > n:
                        return ctx.problem(
                            loc,
                            f"{path}:1: unexpected column '{cells[n]}'; a trace has "
                            f"{count} columns, {header}",
                        )
                    continue  # a header
                return ctx.problem(loc, f"{path}:{number}: expected '{header}', got '{line}'")
            if len(cells) > n:
                return ctx.problem(
                    loc,
                    f"{path}:{number}: unexpected {'third' if n == 2 else 'extra'} column "
                    f"'{cells[n]}'; a trace has {count} columns, {header}",
                )
            if not all(map(math.isfinite, row)) or row[0] < 0 or (not self.signed and min(row) < 0):
                what = "bandwidths" if n == 2 and not self.signed else "values finite"
                return ctx.problem(loc, f"{path}:{number}: times and {what} must be >= 0")
            scaled = tuple(v * k for v, k in zip(row, self.scales, strict=True))
            if row[0] > MAX_HORIZON_S or not all(map(math.isfinite, scaled)):
                return ctx.problem(
                    loc,
                    f"{path}:{number}: a time beyond the {MAX_HORIZON_S:g} s horizon "
                    "(MAX_HORIZON_S) or a value that overflows",
                )
            if rows and row[0] <= rows[-1][0]:
                return ctx.problem(loc, f"{path}:{number}: times must increase")
            rows.append(scaled)
        if not rows:
            return ctx.problem(loc, f"{self.what} {path} has no rows")
        return rows
