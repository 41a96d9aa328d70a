"""The ledger's running totals: one record per unit and per link direction.

Plain ``__slots__`` records the hot path updates in place (reached through each op's
:class:`~simulator.engine.state.OpStep`, not looked up by unit id); the
:class:`~simulator.engine.ledger.Ledger` reads them into its tables.
"""

from __future__ import annotations


class UnitTally:
    """One unit's running totals during a run: memory in use, its ops' queueing and energy.

    The hot path reaches it through the op's :class:`~simulator.engine.state.OpStep`
    (no lookup by unit id per op).
    """

    __slots__ = (
        "active_energy_j",
        "memory_bytes",
        "memory_stall_s",
        "partial_busy_s",
        "peak_memory_bytes",
        "wait_max_s",
        "wait_total_s",
        "weights_bytes",
    )

    def __init__(self):
        self.memory_bytes = 0  # in use now: weights and buffers
        self.peak_memory_bytes = 0
        self.weights_bytes = 0
        self.active_energy_j = 0.0  # of the ops the unit ran
        self.partial_busy_s = 0.0  # of ops cut short when the run stopped
        self.memory_stall_s = 0.0  # op time lost waiting for shared DRAM
        # the waits (start - ready) in the queue of the ops run (as many as the unit's
        # server served: every op that ends is booked here)
        self.wait_total_s = 0.0
        self.wait_max_s = 0.0

    def alloc(self, nbytes: int) -> None:
        """``nbytes`` more in use (a buffer freed is ``memory_bytes -= nbytes``)."""
        level = self.memory_bytes + nbytes
        self.memory_bytes = level
        if level > self.peak_memory_bytes:
            self.peak_memory_bytes = level


class LinkTally:
    """One link direction's running totals: hops carried, bytes, serialisation and
    queueing seconds."""

    __slots__ = ("busy_s", "hops", "nbytes", "queued_s")

    def __init__(self):
        self.hops = 0
        self.nbytes = 0
        self.busy_s = 0.0
        self.queued_s = 0.0
