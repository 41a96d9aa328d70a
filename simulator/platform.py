"""The platform (nodes, units, network) and the cost oracle policies and the engine ask.

Units are named ``"<node>.<unit>"`` (e.g. ``phone.npu``) everywhere outside a node.
Everything here is pure: no SimPy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.cost_table import Row, op_time_rows
from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import Edge, Op
from simulator.hardware.cost import (
    cost_model,
    energy_for_time_j,
    op_time_parts_s,
    op_time_s,
    unsupported_reason,
)
from simulator.hardware.units import ComputeUnit, Node
from simulator.network.topology import Hop, Link, Network
from simulator.rules import collapse_member_units
from simulator.schema import nearest


def unit_id(node: str, unit: str) -> str:
    return f"{node}.{unit}"


@dataclass(frozen=True)
class Transfer:
    """How a tensor moves between two units.

    ``kind`` is ``local`` (same unit, free), ``explicit`` (tabled ``comm_s``),
    ``onchip`` (sync + shared-memory copy inside a node) or ``network`` (along ``hops``).
    On chip, ``delay_s`` is the sync cost and ``copy_bytes_per_s`` the copy bandwidth.
    """

    kind: str
    delay_s: float = 0.0
    copy_bytes_per_s: float = math.inf
    hops: tuple[Hop, ...] = ()
    mechanism: str = ""

    def time_s(self, nbytes: float) -> float:
        """Contention-free duration (s) of moving ``nbytes``."""
        copy_s = 0.0 if math.isinf(self.copy_bytes_per_s) else nbytes / self.copy_bytes_per_s
        return self.delay_s + copy_s + sum(hop.time_s(nbytes) for hop in self.hops)


class Platform:
    """Nodes with their units, joined by a network.

    Raises
    ------
    SocsimError
        On duplicate node names or a network naming unknown nodes.
    """

    def __init__(self, nodes: Iterable[Node], links: Iterable[Link] = ()):
        self.nodes: dict[str, Node] = {}
        for node in nodes:
            if node.name in self.nodes:
                raise SocsimError(f"duplicate node name '{node.name}'")
            self.nodes[node.name] = node
        devices = [name for name, node in self.nodes.items() if node.role == "device"]
        self.network = Network(self.nodes, links, devices)
        self._units: dict[str, tuple[Node, ComputeUnit]] = {
            unit_id(node.name, unit.name): (node, unit)
            for node in self.nodes.values()
            for unit in node.units
        }

    @property
    def unit_ids(self) -> tuple[str, ...]:
        """Every unit's qualified id, in declaration order."""
        return tuple(self._units)

    def unit(self, uid: str) -> ComputeUnit:
        return self._lookup(uid)[1]

    def node_of(self, uid: str) -> Node:
        return self._lookup(uid)[0]

    def _lookup(self, uid: str) -> tuple[Node, ComputeUnit]:
        try:
            return self._units[uid]
        except KeyError:
            hint = nearest(uid, self._units)
            tip = f" (did you mean '{hint}'?)" if hint else ""
            units = ", ".join(collapse_member_units(list(self._units)))
            raise SocsimError(f"no unit '{uid}'{tip}; units: {units}") from None

    def resolve_unit(self, ref: str, default_node: str | None = None) -> str:
        """Qualified id of ``ref``: ``node.unit``, or a bare unit name on ``default_node``."""
        if ref in self._units:
            return ref
        if default_node is not None and "." not in ref:
            candidate = unit_id(default_node, ref)
            if candidate in self._units:
                return candidate
        self._lookup(ref)  # raises, naming the nearest unit
        return ref

    def units_of(self, node: str) -> tuple[str, ...]:
        return tuple(uid for uid, (n, _) in self._units.items() if n.name == node)

    def role_of(self, node: str) -> str:
        return self.nodes[node].role


#: ops whose times one oracle remembers; past it, it forgets them all and starts over
MEMO_OPS = 100_000


class CostOracle:
    """Times and energies of ops and transfers on a platform (the policies' view).

    Op times are remembered per op object (the op is held, so its ``id`` stays its own):
    an op is frozen and the platform's units are, so its time on a unit never changes,
    whichever graph or policy asks. :meth:`op_time_rows` costs many ops on every unit at
    once (:mod:`simulator.cost_table`); the floats are those of the scalar cost model.

    Parameters
    ----------
    platform : Platform
    """

    def __init__(self, platform: Platform):
        self.platform = platform
        # id(op) -> (op, its times, whether they cover every unit in declaration order)
        self._rows: dict[int, tuple[Op, Row, bool]] = {}
        # id(op) -> (op, (what, uid) -> value): what a plan derives from an op on a unit
        self._derived: dict[int, tuple[Op, dict[tuple[str, str], Any]]] = {}
        self._transfers: dict[tuple[str, str], Transfer] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_rows": {}, "_derived": {}}

    def derived(self, op: Op, what: str, uid: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered per (``op``, ``what``, ``uid``).

        For quantities that depend on the op and the unit alone (the roofline's parts,
        the DRAM demand, which cost model applies): a policy that compiles a plan per
        candidate (``split_point``: one per cut) asks for the same ops on the same units
        again and again. ``compute`` must not depend on anything else. An exception is
        not remembered.
        """
        entry = self._derived.get(id(op))
        if entry is None or entry[0] is not op:
            if len(self._derived) >= MEMO_OPS:
                self._derived.clear()
            entry = self._derived[id(op)] = (op, {})
        memo = entry[1]
        key = (what, uid)
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def _row(self, op: Op) -> Row:
        """The remembered times of ``op`` (uid -> s, None where it cannot run)."""
        entry = self._rows.get(id(op))
        if entry is not None and entry[0] is op:
            return entry[1]
        row: Row = {}
        self._remember(op, row, False)
        return row

    def _remember(self, op: Op, row: Row, full: bool) -> None:
        if len(self._rows) >= MEMO_OPS and id(op) not in self._rows:
            self._rows.clear()
        self._rows[id(op)] = (op, row, full)

    def op_time_rows(self, ops: Sequence[Op]) -> Sequence[Mapping[str, float | None]]:
        """Per op, uid -> execution time (s) on every unit in declaration order, None
        where the unit cannot run it. Read-only: the rows are the oracle's memory."""
        rows: list[Row] = []
        missing = []
        for i, op in enumerate(ops):
            entry = self._rows.get(id(op))
            if entry is not None and entry[0] is op and entry[2]:
                rows.append(entry[1])
            else:
                rows.append({})
                missing.append(i)
        if missing:
            units = [(uid, self.platform.unit(uid)) for uid in self.platform.unit_ids]
            computed = op_time_rows([ops[i] for i in missing], units)
            for i, row in zip(missing, computed, strict=True):
                rows[i] = row
                self._remember(ops[i], row, True)
        return rows

    def unsupported_reason(self, op: Op, uid: str) -> str | None:
        if self._row(op).get(uid) is not None:
            return None
        return unsupported_reason(op, self.platform.unit(uid), uid)

    def supports(self, op: Op, uid: str) -> bool:
        row = self._row(op)
        if uid in row:
            return row[uid] is not None
        return self.unsupported_reason(op, uid) is None

    def op_time_s(self, op: Op, uid: str) -> float:
        """Execution time (s) of ``op`` on unit ``uid``.

        Raises
        ------
        PlacementError
            When the unit cannot run the op.
        SocsimError
            When there is no unit ``uid``.
        """
        row = self._row(op)
        time_s = row.get(uid)
        if time_s is None:
            try:
                time_s = row[uid] = op_time_s(op, self.platform.unit(uid), uid)
            except ValueError as exc:
                raise PlacementError(str(exc), op=op.name) from None
        return time_s

    def cost_model(self, op: Op, uid: str) -> str:
        """Which model costs ``op`` on ``uid``: ``table``, ``predictor`` or ``roofline``."""
        return self.derived(
            op, "cost_model", uid, lambda: cost_model(op, self.platform.unit(uid), uid)
        )

    def op_time_parts_s(self, op: Op, uid: str) -> tuple[float, float, float]:
        """:func:`~simulator.hardware.cost.op_time_parts_s` of ``op`` on ``uid`` (its own
        cores), remembered."""
        unit = self.platform.unit(uid)
        return self.derived(op, "parts", uid, lambda: op_time_parts_s(op, unit, uid))

    def op_energy_j(self, op: Op, uid: str) -> float:
        """Energy (J) of one run of ``op`` on ``uid`` (PlacementError as :meth:`op_time_s`)."""
        return energy_for_time_j(self.platform.unit(uid), self.op_time_s(op, uid))

    def edge_transfer(self, edge: Edge | None, src_uid: str, dst_uid: str) -> Transfer:
        """How a tensor on ``edge`` moves from ``src_uid`` to ``dst_uid``.

        ``edge`` is None for the request input or output (no explicit cost).
        """
        if src_uid == dst_uid:
            return Transfer("local")
        if edge is not None and edge.comm_s is not None:
            return Transfer("explicit", delay_s=edge.comm_s)
        # the same for every tensor between two units: built once per pair (frozen)
        pair = (src_uid, dst_uid)
        transfer = self._transfers.get(pair)
        if transfer is None:
            transfer = self._transfers[pair] = self._modelled_transfer(src_uid, dst_uid)
        return transfer

    def _modelled_transfer(self, src_uid: str, dst_uid: str) -> Transfer:
        """The on-chip or network transfer between two different units."""
        src_node = self.platform.node_of(src_uid)
        dst_node = self.platform.node_of(dst_uid)
        if src_node is dst_node:
            sync_s, mechanism = src_node.sync_for(
                self.platform.unit(src_uid).name, self.platform.unit(dst_uid).name
            )
            return Transfer(
                "onchip",
                delay_s=sync_s,
                copy_bytes_per_s=src_node.shared_memory_bandwidth_bytes_per_s,
                mechanism=mechanism,
            )
        return Transfer("network", hops=self.platform.network.route(src_node.name, dst_node.name))

    def transfer_time_s(
        self, edge: Edge | None, nbytes: float, src_uid: str, dst_uid: str
    ) -> float:
        """Contention-free time (s) to move ``nbytes`` between two units."""
        return self.edge_transfer(edge, src_uid, dst_uid).time_s(nbytes)

    def node_transfer_time_s(self, nbytes: float, src_node: str, dst_node: str) -> float:
        """Contention-free time (s) to move ``nbytes`` between two nodes (0 when equal)."""
        return self.platform.network.transfer_time_s(nbytes, src_node, dst_node)

    def route(self, src_node: str, dst_node: str) -> tuple[Hop, ...]:
        return self.platform.network.route(src_node, dst_node)


def describe_units(platform: Platform) -> Mapping[str, str]:
    """uid -> ``kind`` for messages and tables."""
    return {uid: platform.unit(uid).kind for uid in platform.unit_ids}
