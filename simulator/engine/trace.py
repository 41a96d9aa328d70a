"""The full trace in columns: op and transfer rows at about 54 bytes each.

A row is packed in C as it is recorded (``struct``: the request's id, a code, the times
the engine computed) and appended to a short buffer: the hot path builds no tuple of the
row and keeps no Python object per value. The code stands for what the row refers to (its
app, op, units, nodes, link, bytes): an index into a per-run table of entries, one per
app × op or app × move × hop of every deployed plan, registered when the engine is built
(:meth:`_Columns.register`), so the hot path only reads it off the op or move. Every
:data:`CHUNK_ROWS` rows the buffer is moved into typed columns (``array.array``: 8 bytes
per float, 8 per request id, 4 per code, 2 per level).

The ``ops`` and ``transfers`` tables are built from the columns with numpy: the numeric
columns are copied from the arrays, and the descriptive ones are the code table's
columns taken at the codes, so no Python object is built per row. The dtypes are those
pandas infers from the rows (``int64`` ids, levels, hops and bytes, ``float64`` times and
energies, ``str`` names), and an empty trace is a table of the columns with no rows.
"""

from __future__ import annotations

from array import array
from struct import Struct

import numpy as np
import pandas as pd

OP_COLUMNS = (
    "request_id",
    "app",
    "op",
    "kind",
    "unit",
    "node",
    "ready_s",
    "start_s",
    "end_s",
    "energy_j",
    "level",
    "memory_stall_s",
)
TRANSFER_COLUMNS = (
    "request_id",
    "app",
    "src_op",
    "src_unit",
    "dst_unit",
    "kind",
    "mechanism",
    "link",
    "hop",
    "src_node",
    "dst_node",
    "bytes",
    "queued_s",
    "start_s",
    "end_s",
    "arrive_s",
    "energy_j",
    "device_energy_j",
)

#: Rows buffered as tuples before they move into the columns: large enough that the
#: per-chunk work is amortised, small enough that the buffer (~0.2 MiB) does not matter.
CHUNK_ROWS = 1024

#: numpy dtype of each ``array.array`` typecode used for the stored columns
_NUMPY = {"q": np.int64, "i": np.int32, "h": np.int16, "d": np.float64}


class _Columns:
    """Buffered rows (request id, code, numbers...), moved into typed columns one chunk at
    a time.

    Parameters
    ----------
    stored : dict of {name: typecode}
        The numeric columns kept as ``array.array``, in row order after the code.
    same_as : dict of {name: stored name}, optional
        Table columns always equal to a stored one (stored once).
    """

    def __init__(self, stored: dict[str, str], same_as: dict[str, str] | None = None):
        self.buffer: list[bytes] = []  # rows packed by :attr:`pack`
        self.request_id = array("q")
        self.code = array("i")
        self.stored = {name: array(typecode) for name, typecode in stored.items()}
        # each row is packed in C when it is recorded (struct: native order, standard
        # sizes, no padding) and a flush reads the columns back through numpy: no tuple
        # per row, no Python object per value, and ``array(typecode, values)``'s per-item
        # argument parsing avoided
        typecodes = "qi" + "".join(stored.values())
        #: ``pack(request_id, code, *stored values)``: a row as the buffer holds it
        self.pack = Struct("=" + typecodes).pack
        self._dtype = np.dtype(
            [(f"f{k}", _NUMPY[typecode]) for k, typecode in enumerate(typecodes)]
        )
        self._same_as = same_as or {}
        self.entries: list[tuple] = []  # by code: what the rows of that code refer to

    def __len__(self) -> int:
        return len(self.request_id) + len(self.buffer)

    def register(self, entries: list[tuple]) -> int:
        """Give ``entries`` (what rows will refer to) consecutive codes; returns the first."""
        first = len(self.entries)
        self.entries.extend(entries)
        return first

    def flush(self) -> None:
        """Move the buffered rows into the columns."""
        if not self.buffer:
            return
        packed = b"".join(self.buffer)
        self.buffer.clear()
        rows = np.frombuffer(packed, dtype=self._dtype)
        columns = (self.request_id, self.code, *self.stored.values())
        for k, column in enumerate(columns):
            column.frombytes(rows[f"f{k}"].tobytes())

    def numbers(self, name: str) -> np.ndarray:
        """A stored column as a numpy array of its own (int64 for integers)."""
        column = self.stored[name]
        values = np.frombuffer(column, dtype=_NUMPY[column.typecode])  # a view: copy it
        return values.astype(np.int64) if values.dtype.kind == "i" else values.copy()

    def table(self, names: tuple[str, ...], describe) -> pd.DataFrame:
        """The table of columns ``names``; ``describe(entries)`` gives the described ones."""
        self.flush()
        if not len(self):
            return pd.DataFrame([], columns=list(names))
        columns = self.columns(describe(self.entries))
        columns.update({name: columns[same].copy() for name, same in self._same_as.items()})
        return pd.DataFrame(columns, columns=list(names))

    def columns(self, described: dict[str, list]) -> dict[str, np.ndarray]:
        """Every column of the flushed rows, in order: request ids, the described ones
        (``{name: one value per code}``) taken at the rows' codes, the stored ones."""
        codes = np.frombuffer(self.code, dtype=np.int32)
        columns = {"request_id": np.frombuffer(self.request_id, dtype=np.int64).copy()}
        columns.update({name: take_described(values, codes) for name, values in described.items()})
        columns.update({name: self.numbers(name) for name in self.stored})
        return columns


def take_described(values: list, codes: np.ndarray):
    """A descriptive column: one value per code (dtype as pandas infers it), at the codes.

    Taken from the inferred array itself, so a string column goes straight into pandas'
    string storage without an object array per row in between.
    """
    return pd.Series(values).array.take(codes)


class OpTrace:
    """The ``ops`` rows: one per op run (request id, code, times, energy, level, stall);
    a code stands for (app, plan, op index)."""

    def __init__(self, node_of_unit: dict[str, str]):
        self._node = node_of_unit
        self.rows = _Columns(
            {
                "ready_s": "d",
                "start_s": "d",
                "end_s": "d",
                "energy_j": "d",
                "level": "h",
                "memory_stall_s": "d",
            },
        )
        self.buffer = self.rows.buffer

    def register(self, app: str, plan) -> int:
        """Codes for the ops of ``plan`` run for ``app``: op ``i``'s is the first + ``i``."""
        return self.rows.register([(app, plan, i) for i in range(plan.size)])

    def table(self) -> pd.DataFrame:
        return self.rows.table(OP_COLUMNS, self._describe)

    def _describe(self, entries: list[tuple]) -> dict[str, list]:
        units = [plan.units[i] for _, plan, i in entries]
        return {
            "app": [app for app, _, _ in entries],
            "op": [plan.ops[i] for _, plan, i in entries],
            "kind": [plan.kinds[i] for _, plan, i in entries],
            "unit": units,
            "node": [self._node[uid] for uid in units],
        }


class TransferTrace:
    """The ``transfers`` rows: one per move or network hop of a request.

    A move (on-chip, explicit cost) has hop ``-1``, no link and no energy; it is queued
    when it starts and arrives when it ends. A hop's request energy is also its device
    energy (only device-end radios are booked), so one column holds both. A code stands
    for (app, plan, move, hop index).
    """

    def __init__(self):
        self.rows = _Columns(
            {"queued_s": "d", "start_s": "d", "end_s": "d", "arrive_s": "d", "energy_j": "d"},
            same_as={"device_energy_j": "energy_j"},
        )
        self.buffer = self.rows.buffer

    def register(self, app: str, plan, move) -> int:
        """Codes for ``move`` of ``plan`` run for ``app``: the move's (hop -1) when it has
        no hop, else hop ``k``'s is the first + ``k``."""
        hops = range(len(move.hops)) if move.hops else (-1,)
        return self.rows.register([(app, plan, move, k) for k in hops])

    def table(self) -> pd.DataFrame:
        return self.rows.table(TRANSFER_COLUMNS, self._describe)

    @staticmethod
    def _describe(entries: list[tuple]) -> dict[str, list]:
        described: dict[str, list] = {name: [] for name in TRANSFER_COLUMNS[1:12]}
        for app, plan, move, k in entries:
            hop = move.hops[k] if k >= 0 else None
            source = f"{plan.source}:<source>"
            values = (
                app,
                plan.ops[move.src_op] if move.src_op is not None else "<input>",
                move.src_unit or source,
                move.dst_unit or source,
                "network" if hop is not None else move.transfer.kind,
                move.transfer.mechanism,
                hop.link if hop is not None else "",
                k,
                hop.src if hop is not None else "",
                hop.dst if hop is not None else "",
                move.nbytes,
            )
            for column, value in zip(described.values(), values, strict=True):
                column.append(value)
        return described
