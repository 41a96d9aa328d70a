"""The engine's books: trace rows, memory in use, radio busy time, exact energy.

Energy is integrated exactly, never sampled: every component's power is piecewise
constant between events, so over a window of length W

* a unit draws ``idle_w * (W - busy) + active_w * busy``;
* a radio draws ``idle_w * W + (tx_w - idle_w) * tx_busy + (rx_w - idle_w) * rx_busy``
  (sending and receiving at once add their increments above idle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pandas as pd

from simulator.engine.servers import UnitServer
from simulator.engine.tally import LinkTally, UnitTally
from simulator.engine.trace import (
    CHUNK_ROWS,
    OP_COLUMNS,  # noqa: F401 (re-exported: the columns of the tables the ledger builds)
    TRANSFER_COLUMNS,  # noqa: F401
    OpTrace,
    TransferTrace,
)
from simulator.placement.plan import ExecutionPlan, Move
from simulator.platform import Platform

if TYPE_CHECKING:  # the records the hot path passes (state.py imports this module)
    from simulator.engine.state import FastMove, OpStep, Request

RADIO_COLUMNS = [
    "node",
    "link",
    "technology",
    "model",
    "tx_s",
    "rx_s",
    "promotion_energy_j",
    "connected_energy_j",
    "tail_energy_j",
    "idle_energy_j",
    "active_energy_j",
    "energy_j",
]
LINK_COLUMNS = (
    "link",
    "src_node",
    "dst_node",
    "hops",
    "bytes",
    "busy_s",
    "queue_wait_mean_s",
)
#: How much of the per-op trace a run keeps (``simulate(trace=...)``, ``--trace``):
#: full: op and transfer rows; summary: request rows and per-unit/link aggregates only;
#: none: aggregates only (memory does not grow with the number of ops).
TRACE_LEVELS = ("full", "summary", "none")


class Ledger:
    """Collects what happened during one run.

    With ``keep_rows`` false no op or transfer row is kept: the per-unit queueing
    statistics and per-link-direction totals, which are always streamed, remain.
    """

    def __init__(
        self,
        platform: Platform,
        units: dict[str, UnitServer],
        keep_rows: bool = True,
        new_tally: Callable[[str], UnitTally] | None = None,
    ):
        self.platform = platform
        self.units = units
        self.keep_rows = keep_rows
        #: unit id -> its running totals (``new_tally(uid)`` makes each, when given: a
        #: tally that logs memory over time)
        self.tallies = {uid: new_tally(uid) if new_tally else UnitTally() for uid in units}
        #: per (link, src node) that carried a hop: its totals
        self.link_totals: dict[tuple[str, str], LinkTally] = {}
        self.last_op_end_s = 0.0  # the end of the last op that ran
        self.partial_rows: list[tuple[str, float, float, float, float]] = []
        self._deployed: set = set()
        self._node = {uid: platform.node_of(uid).name for uid in units}
        self.ops = OpTrace(self._node)
        self.transfers = TransferTrace()
        # the hot path appends packed rows here (each chunk is flushed into the columns)
        self._op_rows = self.ops.buffer
        self._pack_op = self.ops.rows.pack
        self._transfer_rows = self.transfers.buffer
        self._pack_transfer = self.transfers.rows.pack
        self._roles = {name: node.role for name, node in platform.nodes.items()}
        # radio busy seconds per (link, node, "tx"|"rx"), device ends only
        self.radio_busy: dict[tuple[str, str, str], float] = {}
        for link in platform.network.links.values():
            if link.radio is None:
                continue
            for end in (link.a, link.b):
                if self._roles[end] == "device":
                    self.radio_busy[(link.name, end, "tx")] = 0.0
                    self.radio_busy[(link.name, end, "rx")] = 0.0

    # -- memory ------------------------------------------------------------------------------
    @property
    def memory_now(self) -> dict[str, int]:
        """Bytes in use on each unit now."""
        return {uid: tally.memory_bytes for uid, tally in self.tallies.items()}

    @property
    def memory_peak(self) -> dict[str, int]:
        """The most bytes each unit held at once."""
        return {uid: tally.peak_memory_bytes for uid, tally in self.tallies.items()}

    @property
    def weights(self) -> dict[str, int]:
        """Bytes of weights resident on each unit from t = 0."""
        return {uid: tally.weights_bytes for uid, tally in self.tallies.items()}

    def load_weights(self, plan: ExecutionPlan) -> None:
        """Make the plan's weights resident from t = 0 (once per distinct deployment)."""
        key = (plan.model, plan.units)
        if key in self._deployed:
            return
        self._deployed.add(key)
        for uid, nbytes in zip(plan.units, plan.weight_bytes, strict=True):
            self.tallies[uid].weights_bytes += nbytes
            self.tallies[uid].alloc(nbytes)

    def free(self, uid: str, nbytes: int) -> None:
        """A buffer of ``nbytes`` on unit ``uid`` is released."""
        self.tallies[uid].memory_bytes -= nbytes

    # -- trace -------------------------------------------------------------------------------
    def op_codes(self, app: str, plan: ExecutionPlan) -> int:
        """Trace codes of the ops of ``plan`` run for ``app``: op ``i``'s is the result + ``i``
        (registered once per deployed plan, when the engine is built)."""
        return self.ops.register(app, plan)

    def move_code(self, app: str, plan: ExecutionPlan, move: Move) -> int:
        """Trace code of ``move`` of ``plan`` run for ``app`` (+ ``k`` for its hop ``k``)."""
        return self.transfers.register(app, plan, move)

    def op(
        self,
        step: OpStep,
        request: Request,
        i: int,
        start_s: float,
        end_s: float,
        energy_j: float,
        level: int,
        stall_s: float,
    ) -> None:
        """Op ``i`` of ``request`` (its ``step``) ran over ``[start_s, end_s]``."""
        tally = step.tally
        tally.active_energy_j += energy_j
        if stall_s:  # in whole-unit seconds, as busy_s
            tally.memory_stall_s += stall_s * step.core_share
        if end_s > self.last_op_end_s:
            self.last_op_end_s = end_s
        ready_s = request.ready_s[i]
        wait_s = start_s - ready_s
        tally.wait_total_s += wait_s
        if wait_s > tally.wait_max_s:
            tally.wait_max_s = wait_s
        if not self.keep_rows:
            return
        rows = self._op_rows
        rows.append(
            self._pack_op(
                request.rid, step.trace_code, ready_s, start_s, end_s, energy_j, level, stall_s
            )
        )
        if len(rows) >= CHUNK_ROWS:
            self.ops.rows.flush()

    def partial_op(
        self, uid: str, start_s: float, end_s: float, core_share: float, busy_w: float
    ) -> None:
        """An op cut short at ``end_s`` by the end of the run or a failure of its unit: its
        busy time and energy.

        The interval is kept (``partial_rows``) for the ``power`` table: the op is not in
        the trace but drew power until the run stopped.
        """
        busy_share_s = (end_s - start_s) * core_share
        if end_s > self.last_op_end_s:  # its energy lies in the window (a failure cut it)
            self.last_op_end_s = end_s
        tally = self.tallies[uid]
        tally.partial_busy_s += busy_share_s
        tally.active_energy_j += busy_w * busy_share_s
        self.partial_rows.append((uid, start_s, end_s, core_share, busy_w))

    def move(self, request: Request, fast: FastMove, start_s: float, end_s: float) -> None:
        """An on-chip or explicit-cost move (a delay; no link, no radio)."""
        if self.keep_rows:  # queued and started at once; arrives as it ends
            rows = self._transfer_rows
            rows.append(
                self._pack_transfer(
                    request.rid, fast.trace_code, start_s, start_s, end_s, end_s, 0.0
                )
            )
            if len(rows) >= CHUNK_ROWS:
                self.transfers.rows.flush()

    def hop(
        self,
        request: Request,
        fast: FastMove,
        k: int,
        queued_s: float,
        start_s: float,
        end_s: float,
        delay_s: float,
    ) -> tuple[float, float]:
        """A hop's serialisation finished; book radio time, return (energy, device energy).

        ``delay_s`` is the propagation after the last bit (latency, jitter, retransmissions).
        """
        move = fast.move
        hop = move.hops[k]
        link = self.platform.network.links[hop.link]
        energy = 0.0
        serialise_s = end_s - start_s
        radio = link.radio
        if radio is not None:  # the request's share: connected power while it serialises
            if self._roles[hop.src] == "device":
                self.radio_busy[(hop.link, hop.src, "tx")] += serialise_s
                energy += radio.connected_power_w(hop.bandwidth_bps, 0.0) * serialise_s
            if self._roles[hop.dst] == "device":
                self.radio_busy[(hop.link, hop.dst, "rx")] += serialise_s
                energy += radio.connected_power_w(0.0, hop.bandwidth_bps) * serialise_s
        totals = self.link_totals.get((hop.link, hop.src))
        if totals is None:
            totals = self.link_totals[(hop.link, hop.src)] = LinkTally()
        totals.hops += 1
        totals.nbytes += move.nbytes
        totals.busy_s += serialise_s
        totals.queued_s += start_s - queued_s
        if not self.keep_rows:
            return energy, energy
        code = fast.trace_code + k
        self._transfer(request.rid, code, queued_s, start_s, end_s, end_s + delay_s, energy)
        return energy, energy

    def _transfer(
        self,
        rid: int,
        code: int,
        queued_s: float,
        start_s: float,
        end_s: float,
        arrive_s: float,
        energy_j: float,
    ) -> None:
        rows = self._transfer_rows
        rows.append(self._pack_transfer(rid, code, queued_s, start_s, end_s, arrive_s, energy_j))
        if len(rows) >= CHUNK_ROWS:
            self.transfers.rows.flush()

    # -- tables ------------------------------------------------------------------------------
    def op_table(self) -> pd.DataFrame:
        """The ``ops`` table (columns :data:`OP_COLUMNS`), built from the trace's columns."""
        return self.ops.table()

    def transfer_table(self) -> pd.DataFrame:
        """The ``transfers`` table (columns :data:`TRANSFER_COLUMNS`)."""
        return self.transfers.table()

    def trace_rows(self) -> int:
        """How many op and transfer rows the trace holds."""
        return len(self.ops.rows) + len(self.transfers.rows)

    def flush(self) -> None:
        """Move every buffered trace row into the columns (before measuring their size)."""
        self.ops.rows.flush()
        self.transfers.rows.flush()

    def link_table(self) -> pd.DataFrame:
        """One row per link direction that carried a hop: totals streamed during the run."""
        rows = [
            {
                "link": link,
                "src_node": src,
                "dst_node": self._other_end(link, src),
                "hops": tally.hops,
                "bytes": tally.nbytes,
                "busy_s": tally.busy_s,
                "queue_wait_mean_s": tally.queued_s / tally.hops,
            }
            for (link, src), tally in sorted(self.link_totals.items())
        ]
        return pd.DataFrame(rows, columns=list(LINK_COLUMNS))

    def _other_end(self, link_name: str, src: str) -> str:
        link = self.platform.network.links[link_name]
        return link.b if src == link.a else link.a

    def unit_table(
        self, window_s: float, span_s: float, down_s: Mapping[str, float] | None = None
    ) -> pd.DataFrame:
        """One row per unit: energy over the window; utilisation over the requests' span.

        ``down_s``: seconds each failed unit was down inside the window (no idle power).
        """
        rows = []
        for uid, server in self.units.items():
            node = self.platform.node_of(uid)
            unit = self.platform.unit(uid)
            # an op holds op_cores of the unit's cores: busy time counts in whole-unit seconds
            tally = self.tallies[uid]
            busy = server.busy_s * unit.op_cores / unit.cores + tally.partial_busy_s
            busy_in_window, active_energy = self.in_window(uid, busy, tally)
            up_s = window_s - down_s.get(uid, 0.0) if down_s else window_s
            idle_energy = unit.idle_w * max(up_s - busy_in_window, 0.0)
            rows.append(
                {
                    "node": node.name,
                    "unit": uid,
                    "kind": unit.kind,
                    "role": node.role,
                    "ops_run": server.jobs_served,
                    "busy_s": busy,
                    "memory_stall_s": tally.memory_stall_s,
                    "utilisation": busy / span_s if span_s > 0 else 0.0,
                    "idle_energy_j": idle_energy,
                    "active_energy_j": active_energy,
                    "energy_j": idle_energy + active_energy,
                    "weights_bytes": tally.weights_bytes,
                    "peak_memory_bytes": tally.peak_memory_bytes,
                    "memory_capacity_bytes": unit.memory_bytes,
                    "over_capacity": tally.peak_memory_bytes > unit.memory_bytes,
                    "queue_wait_mean_s": (
                        tally.wait_total_s / server.jobs_served if server.jobs_served else 0.0
                    ),
                    "queue_wait_max_s": tally.wait_max_s,
                }
            )
        return pd.DataFrame(rows)

    def in_window(self, uid: str, busy_s: float, tally: UnitTally) -> tuple[float, float]:
        """(busy whole-unit s, active J) of unit ``uid`` inside the energy window: all of
        the run's, since the default window holds every op (a fixed one clips them:
        :class:`~simulator.engine.window.WindowLedger`)."""
        return busy_s, tally.active_energy_j

    def radio_table(self, radios, window: tuple[float, float]) -> pd.DataFrame:
        """One row per device-end radio: seconds sending/receiving, energy by state."""
        rows = []
        for state in radios:
            link = self.platform.network.links[state.link]
            by_state = state.energy_by_state(*window)
            tail = sum(by_state[stage.state] for stage in state.radio.tail)
            active = by_state["promotion"] + by_state["connected"] + tail
            rows.append(
                {
                    "node": state.node,
                    "link": state.link,
                    "technology": link.technology,
                    "model": state.radio.model,
                    "tx_s": self.radio_busy[(state.link, state.node, "tx")],
                    "rx_s": self.radio_busy[(state.link, state.node, "rx")],
                    "promotion_energy_j": by_state["promotion"],
                    "connected_energy_j": by_state["connected"],
                    "tail_energy_j": tail,
                    "idle_energy_j": by_state["idle"],
                    "active_energy_j": active,
                    "energy_j": active + by_state["idle"],
                }
            )
        return pd.DataFrame(rows, columns=RADIO_COLUMNS)

    @staticmethod
    def radio_state_table(radios, window: tuple[float, float]) -> pd.DataFrame:
        """Every constant-power interval of every radio inside the window."""
        start_s, end_s = window
        rows = [
            (
                state.node,
                state.link,
                name,
                max(a, start_s),
                min(b, end_s),
                power,
                power * (min(b, end_s) - max(a, start_s)),
            )
            for state in radios
            for name, a, b, power in state.intervals
            if min(b, end_s) > max(a, start_s)
        ]
        columns = ["node", "link", "state", "start_s", "end_s", "power_w", "energy_j"]
        return pd.DataFrame(rows, columns=columns)
