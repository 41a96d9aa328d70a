"""Memory during a run: nodes' pools under ``refuse``, and memory in use over time.

:class:`MemoryGate` admits a request only while what it can hold on each refusing node
(its activation bound, :func:`~simulator.placement.memory_pool.activation_bound`) fits
beside the weights and the bounds of the requests in flight; what does not fit is
dropped with the reason. A request's reservation is released when it completes or its
attempt is given up (minus the outputs of its ops still running, released as they end).

:class:`LoggedTally` is a unit's :class:`~simulator.engine.tally.UnitTally` that logs
every change of its memory in use, for the ``memory`` table (trace ``full`` only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import simpy

from simulator.engine.state import RUNNING, App, Request
from simulator.engine.tally import UnitTally
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


class MemoryGate:
    """Reservations of the requests in flight on the nodes that refuse to overcommit.

    Parameters
    ----------
    platform : Platform
    apps : sequence of App
    weights : mapping of unit id -> weight bytes resident from t = 0
    book, on_over
        A request refused is dropped in the book; ``on_over(app)`` frees a closed loop.
    """

    def __init__(self, platform: Platform, apps: Sequence[App], weights: Mapping[str, int],
                 book, on_over: Callable[[App], None]):  # fmt: skip
        self.book = book
        self.on_over = on_over
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
        self._bounds = {
            id(rep): {
                node: nbytes
                for node, nbytes in activation_bound(rep.plan, platform).items()
                if node in self.pool and nbytes > 0
            }
            for app in apps
            for rep in app.replicas
        }

    @property
    def active(self) -> bool:
        """Whether any node refuses (else nothing is gated)."""
        return bool(self.pool)

    def gate(self, start: Callable[[Request, float], None]) -> Callable[[Request, float], None]:
        """``start`` for the requests whose reservation fits; the others are dropped."""

        def gated(request: Request, now: float) -> None:
            reason = self.admit(request)
            if reason is None:
                start(request, now)
                return
            request.rep.in_flight -= 1
            self.book.drop(request, reason)
            self.on_over(request.app)

        return gated

    def admit(self, request: Request) -> str | None:
        """Reserve the request's bound on every refusing node; the reason if one lacks it."""
        need = self._bounds[id(request.rep)]
        for node, nbytes in need.items():
            if nbytes > self.free[node]:
                return (
                    f"memory: node '{node}' has {size_text(max(self.free[node], 0))} of its "
                    f"{size_text(self.pool[node])} pool free (weights and requests in "
                    f"flight); this request may hold {size_text(nbytes)} (memory_policy: "
                    "refuse)"
                )
        for node, nbytes in need.items():
            self.free[node] -= nbytes
        request.reserved = dict(need) if need else None
        return None

    def release(self, request: Request) -> None:
        """The attempt is over: its reservation returns to the pools, except the outputs
        of its ops still running (an attempt given up), released as each ends."""
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

    def release_op(self, request: Request, uid: str, nbytes: int) -> None:
        """An op of an attempt given up ended on ``uid``: its output's reservation goes."""
        node = self.node_of[uid]
        held = request.reserved
        if held is not None and node in held:
            held[node] -= nbytes
            self.free[node] += nbytes
