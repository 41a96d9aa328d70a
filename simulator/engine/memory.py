"""Memory during a run: nodes' pools under ``refuse``, and memory in use over time.

:class:`MemoryGate` lets a request into the refusing pools when its first op starts: it
then reserves, on every refusing node its plan uses, what it can hold
there (its activation bound, :func:`~simulator.placement.memory_pool.activation_bound`).
A request whose bound does not fit beside the weights and the reservations of the
requests started waits, first come first served, holding nothing in the pools: its op
is parked (the unit serves the next one, :data:`~simulator.engine.servers.PARKED`). On
every node with a pool (``refuse`` or ``allow``), a tensor that arrives for a request
not started yet (its input, queued for the unit) is booked in the node's memory
only when the request is let in: it waits in the app's queue, outside the pool. A
reservation is released when the request completes or its attempt is given up (minus
the outputs of its ops still running, released as they end), and the requests waiting
are let in, in order (docs/memory.md).

:class:`LoggedTally` is a unit's :class:`~simulator.engine.tally.UnitTally` that logs
every change of its memory in use, for the ``memory`` table (trace ``full`` only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import simpy

from simulator.engine.state import RUNNING, InBuf, Replica, Request
from simulator.engine.tally import UnitTally
from simulator.errors import SimulationError
from simulator.placement.memory_pool import activation_bound, size_text
from simulator.platform import Platform

#: columns of the ``memory`` table
MEMORY_COLUMNS = (
    "time_s",
    "node",
    "unit",
    "weights_bytes",
    "activation_bytes",
    "unit_bytes",
    "unit_capacity_bytes",
    "node_bytes",
    "node_pool_bytes",
)
_IN_USE = UnitTally.memory_bytes  # type: ignore[misc]  # the slot the property stores into


class LoggedTally(UnitTally):
    """A unit's tally that logs ``(time_s, unit, bytes in use)`` at every change."""

    __slots__ = ("_env", "_log", "_uid")

    def __init__(self, env: simpy.Environment, log: list, uid: str):
        self._env = env
        self._log = log
        self._uid = uid
        super().__init__()

    @property  # type: ignore[override]
    def memory_bytes(self) -> int:
        return _IN_USE.__get__(self)

    @memory_bytes.setter
    def memory_bytes(self, value: int) -> None:
        _IN_USE.__set__(self, value)
        self._log.append((self._env._now, self._uid, value))


def memory_table(
    log: Sequence[tuple[float, str, int]], weights: Mapping[str, int], platform: Platform
) -> pd.DataFrame:
    """The ``memory`` table from a run's log: at every instant memory changed, one row per
    unit that changed, with the unit's and its node's bytes in use after that instant."""
    node_of = {uid: platform.node_of(uid).name for uid in platform.unit_ids}
    current = dict.fromkeys(platform.unit_ids, 0)
    node_bytes = dict.fromkeys(platform.nodes, 0)
    rows: list[tuple] = []
    k, n = 0, len(log)
    while k < n:
        t = log[k][0]
        changed: dict[str, None] = {}
        while k < n and log[k][0] == t:
            _, uid, value = log[k]
            node_bytes[node_of[uid]] += value - current[uid]
            current[uid] = value
            changed[uid] = None
            k += 1
        for uid in changed:
            node = platform.nodes[node_of[uid]]
            used = current[uid]
            rows.append(
                (
                    t,
                    node.name,
                    uid,
                    weights[uid],
                    used - weights[uid],
                    used,
                    platform.unit(uid).memory_bytes,
                    node_bytes[node.name],
                    node.memory_bytes,
                )
            )
    return pd.DataFrame(rows, columns=list(MEMORY_COLUMNS))


#: where a tensor held outside a refusing pool is booked until its request is let in
#: (the sink absorbs a free of it when the attempt is given up first; nothing reads it)
_OUTSIDE = UnitTally()


class MemoryGate:
    """Reservations of the requests started on the nodes that refuse to overcommit.

    Parameters
    ----------
    platform : Platform
    weights : mapping of unit id -> weight bytes resident from t = 0
    tallies : mapping of unit id -> UnitTally
        The units' tallies (a tensor that arrives on one for a request not let in yet is
        booked there only when the request is).
    servers : sequence
        Every unit's server: a request let in has its parked jobs queued again there.

    Notes
    -----
    Why nothing waits forever: a request reserves on all its refusing nodes at once, so
    a request let in never waits for memory again and runs to its end, releasing its
    reservations; a request waiting holds nothing in the pools; no request waiting is
    overtaken on a node by a later one, so the oldest is let in as soon as the requests
    started before it have released enough; and each request's bound fits its nodes
    alone (checked at load time, :func:`~simulator.placement.memory_pool.pool_problems`;
    a plan made during the run that does not is a :class:`SimulationError` here).
    """

    def __init__(self, platform: Platform, weights: Mapping[str, int],
                 tallies: Mapping[str, UnitTally], servers: Sequence[Any]):  # fmt: skip
        self.platform = platform
        self.node_of = {uid: platform.node_of(uid).name for uid in platform.unit_ids}
        self.pool = {
            name: node.memory_bytes
            for name, node in platform.nodes.items()
            if node.memory_policy == "refuse" and math.isfinite(node.memory_bytes)
        }
        #: bytes of each pool not held by weights or reservations
        self.free = dict(self.pool)
        for uid, nbytes in weights.items():
            if self.node_of[uid] in self.free:
                self.free[self.node_of[uid]] -= nbytes
        #: what the weights leave of each pool: the most one request may reserve there
        self.room = dict(self.free)
        #: the least each pool had free after a reservation (B; never below 0)
        self.low_free = dict(self.free)
        self.servers = tuple(servers)
        # the tallies of the units on nodes with a pool, refusing or not (by id): a tensor
        # enters a pool when its request starts there, whatever the policy, so that
        # ``allow`` and ``refuse`` book the same bytes while nothing is short
        pooled = {name for name, node in platform.nodes.items() if math.isfinite(node.memory_bytes)}
        self._pooled = {
            id(tally): uid for uid, tally in tallies.items() if self.node_of[uid] in pooled
        }
        self._bounds: dict[int, tuple[Replica, dict[str, int]]] = {}  # id(rep) -> need
        #: the requests waiting, first come first:  id -> (request, need)
        self._waiting: dict[int, tuple[Request, dict[str, int]]] = {}
        self._waiting_on: dict[str, int] = dict.fromkeys(self.pool, 0)  # per node
        #: tensors that reached a refusing node for a request waiting or not started
        self._held: dict[int, list[tuple[InBuf, UnitTally]]] = {}
        #: requests that waited for memory before their first op started
        self.waited = 0

    @property
    def active(self) -> bool:
        """Whether any node has a pool (else nothing is gated or held)."""
        return bool(self._pooled)

    def _need(self, rep: Replica) -> dict[str, int]:
        """The request's bound on each refusing node (of its replica's whole plan)."""
        known = self._bounds.get(id(rep))
        if known is not None:
            return known[1]
        need = {
            node: nbytes
            for node, nbytes in activation_bound(rep.plan, self.platform).items()
            if node in self.pool and nbytes > 0
        }
        for node, nbytes in need.items():
            if nbytes > self.room[node]:
                raise SimulationError(
                    f"memory: node '{node}' has {size_text(self.room[node])} of its "
                    f"{size_text(self.pool[node])} pool beside its weights; a request of "
                    f"this plan may hold {size_text(nbytes)} there, so it could never "
                    "start (memory_policy: refuse; give memory_gb or memory_policy: allow)"
                )
        self._bounds[id(rep)] = (rep, need)  # the replica kept: its id stays its own
        return need

    def parks(self, request: Request) -> bool:
        """An op of ``request``, not let in yet, is starting: let the request in (True:
        it must wait, the op is parked). Called by the dataflow at each op start while
        ``request.reserved`` is None."""
        if id(request) in self._waiting:  # another of its ops: it waits too
            return True
        need = self._need(request.rep)
        waiting_on = self._waiting_on
        if not any(waiting_on[node] for node in need) and self._fits(need):
            self._let_in(request, need)
            return False
        self._waiting[id(request)] = (request, need)
        for node in need:
            waiting_on[node] += 1
        self.waited += 1
        return True

    def hold(self, request: Request, buf: InBuf) -> bool:
        """A tensor reached a unit for ``request``, not let in yet: True when that unit is
        on a node with a pool (the tensor is booked there only when the request is let in)."""
        if id(buf.tally) not in self._pooled:
            return False
        self._held.setdefault(id(request), []).append((buf, buf.tally))
        buf.tally = _OUTSIDE
        return True

    def _fits(self, need: Mapping[str, int]) -> bool:
        free = self.free
        return all(nbytes <= free[node] for node, nbytes in need.items())

    def _let_in(self, request: Request, need: Mapping[str, int]) -> None:
        free, low = self.free, self.low_free
        for node, nbytes in need.items():
            left = free[node] = free[node] - nbytes
            if left < low[node]:
                low[node] = left
        request.reserved = dict(need)  # {} for a request with nothing on a refusing node
        for buf, tally in self._held.pop(id(request), ()):
            buf.tally = tally
            if buf.readers > 0:
                tally.alloc(buf.nbytes)

    def _admit_waiting(self) -> None:
        """Let in the requests waiting that fit, in order; one that does not blocks the
        later ones on its nodes (none is overtaken, so none waits forever)."""
        if not self._waiting:
            return
        blocked: set[str] = set()
        for key, (request, need) in list(self._waiting.items()):
            if blocked.isdisjoint(need) and self._fits(need):
                del self._waiting[key]
                for node in need:
                    self._waiting_on[node] -= 1
                self._let_in(request, need)
                for server in self.servers:
                    if server.parked:
                        server.unpark(lambda payload: payload[0] is request)  # noqa: B023
            else:
                blocked.update(need)
                if len(blocked) == len(self.pool):
                    return

    def release(self, request: Request) -> None:
        """The attempt is over: its reservation returns to the pools, except the outputs
        of its ops still running (an attempt given up), released as each ends; then the
        requests waiting that now fit are let in. An attempt given up while it waited
        held nothing: it is forgotten."""
        waiting = self._waiting.pop(id(request), None)
        self._held.pop(id(request), None)
        if waiting is not None:
            for node in waiting[1]:
                self._waiting_on[node] -= 1
            self._admit_waiting()  # it may have blocked later ones
            return
        held = request.reserved
        if held is None:
            return
        keep: dict[str, int] = {}
        if request.phase is not None and request.abandoned:
            for i, phase in enumerate(request.phase):
                node = self.node_of[request.plan.units[i]]
                if phase == RUNNING and node in held:
                    keep[node] = keep.get(node, 0) + request.plan.output_bytes[i]
        for node, nbytes in held.items():
            self.free[node] += nbytes - keep.get(node, 0)
        request.reserved = keep or None
        self._admit_waiting()

    def release_op(self, request: Request, uid: str, nbytes: int) -> None:
        """An op of an attempt given up ended on ``uid``: its output's reservation goes."""
        node = self.node_of[uid]
        held = request.reserved
        if held is not None and node in held:
            held[node] -= nbytes
            self.free[node] += nbytes
            self._admit_waiting()

    def stuck(self) -> str:
        """The requests still waiting for memory, for the error of a run that ends with
        requests never completed ('' if none)."""
        if not self._waiting:
            return ""
        rids = [request.rid for request, _ in self._waiting.values()]
        free = ", ".join(f"'{n}' has {size_text(f)} free" for n, f in self.free.items())
        return (
            f"; {len(rids)} wait for memory (requests {rids[:10]}; {free}) behind ops "
            "their units run in a fixed order (online HEFT plans ignore memory); fix: give "
            "the node more memory_gb, or memory_policy: allow"
        )
