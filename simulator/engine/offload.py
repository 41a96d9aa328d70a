"""Adaptive offloading at run time: what an app observes of its links, and its predictions.

An app with ``dispatch: adaptive`` lists candidate placements as replicas. For each
request the engine asks its :class:`AdaptiveApp` for every candidate's objective
predicted *now*: the contention-free estimate of the candidate's plan under the observed
conditions (EWMA throughput per link direction, work committed to each unit, radios
already awake, declared node load factors). The ``adaptive`` dispatcher then takes the
best. Hops that time out abandon the attempt and restart it on the fallback replica (see
``Engine._abandon``).

No SimPy here: the engine feeds observations in and reads predictions out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from simulator.errors import PlacementError
from simulator.placement.estimate import Conditions, declared_load, estimate
from simulator.placement.objectives import Objective
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle
from simulator.scheduling import AdaptiveOptions, ewma


class LinkMonitor:
    """EWMA of the throughput each link direction delivered (bit/s).

    A sample is a transfer's bits over the time it was on the link (from its first bit to
    its last); a transfer abandoned by a timeout gives the bits it moved over the time
    since it was submitted (zero during an outage). Estimates older than ``stale_s``
    are dropped, so the nominal bandwidth is assumed again and the next request that
    prefers the link probes it.
    """

    __slots__ = ("_bps", "_last_s", "alpha", "samples", "stale_s")

    def __init__(self, alpha: float, stale_s: float):
        self.alpha = alpha
        self.stale_s = stale_s
        self._bps: dict[tuple[str, str], float] = {}
        self._last_s: dict[tuple[str, str], float] = {}
        self.samples = 0

    def sample(self, direction: tuple[str, str], bps: float, now_s: float) -> None:
        """Fold one throughput sample (bit/s) of ``direction`` (link, src node) in."""
        fresh = now_s - self._last_s.get(direction, -math.inf) <= self.stale_s
        self._bps[direction] = ewma(self._bps[direction] if fresh else None, bps, self.alpha)
        self._last_s[direction] = now_s
        self.samples += 1

    def view(self, now_s: float) -> dict[tuple[str, str], float]:
        """The current estimates that are not stale."""
        return {
            key: bps for key, bps in self._bps.items() if now_s - self._last_s[key] <= self.stale_s
        }


class AdaptiveApp:
    """An adaptive app's observer and predictor.

    Parameters
    ----------
    app : str
    options : AdaptiveOptions
    plans : sequence of ExecutionPlan
        The candidates, in replica order.
    oracle : CostOracle
    timeout_s : float or None
        The app's transfer timeout; with one, a fallback replica must exist.

    Raises
    ------
    PlacementError
        When a timeout is set, no ``fallback`` is named and every candidate uses the
        network (there is nothing local to fall back to).
    """

    def __init__(
        self,
        app: str,
        options: AdaptiveOptions,
        plans: Sequence[ExecutionPlan],
        oracle: CostOracle,
        timeout_s: float | None = None,
    ):
        self.options = options
        self.objective = Objective(options.objective, options.weights)
        self.plans = tuple(plans)
        self.oracle = oracle
        self.monitor = LinkMonitor(options.ewma_alpha, options.stale_s)
        # where an attempt given up (a hop timed out, or a handover dropped its transfer)
        # restarts: the named replica, else the first that uses no network, else none
        # (the request is dropped; with a transfer timeout that is an error)
        self.fallback = options.fallback
        if self.fallback is None:
            local = [i for i, plan in enumerate(self.plans) if not _uses_network(plan)]
            if not local and timeout_s is not None:
                raise PlacementError(
                    f"app '{app}': transfer_timeout_ms is set but every replica uses the "
                    "network; name the replica to fall back to with adaptive.fallback",
                    "adaptive",
                )
            self.fallback = local[0] if local else None
        self._units = tuple(dict.fromkeys(uid for plan in self.plans for uid in plan.units))
        self._load = declared_load(oracle.platform)
        self.predictions = 0

    def predict(
        self,
        now_s: float,
        backlog_s: Mapping[str, float],
        radio_tail_s: Mapping[tuple[str, str], float],
        live_bps: Mapping[tuple[str, str], float] | None = None,
    ) -> list[float]:
        """Each candidate's objective for a request arriving now (s or J; inf: unreachable).

        Parameters
        ----------
        now_s : float
        backlog_s : Mapping of unit id -> s
            Work committed to each unit (:class:`~simulator.engine.load.LoadTracker`):
            the rest of the ops it runs, its queue, and the ops of requests in flight
            placed on it that are not ready yet.
        radio_tail_s : Mapping of (link, node) -> s
            Radios not idle: how long ago each one's tail began (``-inf``: busy).
        live_bps : Mapping of (link, src node) -> bit/s, optional
            Throughput of the directions that carry transfers right now (what the
            sockets in progress show); it overrides the EWMA of finished transfers.
        """
        observed = self.monitor.view(now_s)
        observed.update(live_bps or {})
        conditions = Conditions(
            bandwidth_bps=observed,
            unit_free_s={uid: backlog_s[uid] for uid in self._units if backlog_s[uid] > 0},
            radio_tail_s=radio_tail_s,
            load_factor=self._load,
        )
        self.predictions += 1
        values = []
        for plan in self.plans:
            value = self.objective.value(estimate(plan, self.oracle, conditions))
            values.append(value if value == value else math.inf)  # inf - inf is not a choice
        return values


def _uses_network(plan: ExecutionPlan) -> bool:
    moves = [*plan.input_moves, *(m for out in plan.moves_out for m in out)]
    return any(move.hops for move in moves)
