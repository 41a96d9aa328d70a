"""A flush moves buffered trace rows into the typed columns value for value.

The rows are packed in C (``struct``) as they are recorded and read back through numpy;
the columns must hold exactly what ``array(typecode, values)`` per column held: every
float bit for bit (ints the clock gives at t = 0 as floats), ids and codes as given,
levels -1 and up.
"""

from __future__ import annotations

import struct
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine.trace import CHUNK_ROWS, OpTrace, TransferTrace

TIMES = st.one_of(st.just(0), st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 9))


def bits(values, typecode: str) -> bytes:
    """The column ``array(typecode, values)`` would hold, as bytes."""
    return array(typecode, values).tobytes()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**62),  # request id
            st.integers(0, 2**31 - 1),  # code
            TIMES,
            TIMES,
            TIMES,
            st.floats(allow_nan=False),  # energy
            st.integers(-1, 2**15 - 1),  # level
            st.one_of(st.just(0.0), st.floats(0.0, 1.0)),  # stall
        ),
        max_size=2 * CHUNK_ROWS + 3,
    )
)
def test_op_rows_flush_exactly(rows):
    trace = OpTrace({})
    for k, row in enumerate(rows):  # in two flushes, as the ledger does at a chunk
        trace.buffer.append(trace.rows.pack(*row))  # as the ledger records a row
        if k == len(rows) // 2:
            trace.rows.flush()
    trace.rows.flush()
    assert not trace.buffer and len(trace.rows) == len(rows)
    columns = list(zip(*rows, strict=True)) or [()] * 8
    assert trace.rows.request_id.tobytes() == bits(columns[0], "q")
    assert trace.rows.code.tobytes() == bits(columns[1], "i")
    for values, (name, column) in zip(columns[2:], trace.rows.stored.items(), strict=True):
        assert column.tobytes() == bits(values, column.typecode), name


def test_transfer_rows_flush_exactly():
    rows = [(3, 7, 0, 0.1, 0.30000000000000004, 2.5e-310, -0.0), (2**40, 0, 1, 2, 3, 4, 5e300)]
    trace = TransferTrace()
    trace.buffer.extend(trace.rows.pack(*row) for row in rows)
    trace.rows.flush()
    assert list(trace.rows.request_id) == [3, 2**40]
    energy = trace.rows.stored["energy_j"]
    assert struct.pack("=2d", *energy) == struct.pack("=2d", -0.0, 5e300)  # the sign of 0
    assert list(trace.rows.stored["queued_s"]) == [0.0, 1.0]
    assert list(trace.rows.stored["arrive_s"]) == [2.5e-310, 4.0]
