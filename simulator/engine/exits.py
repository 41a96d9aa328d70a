"""The engine's early exits: which exit each request of an app takes, and its plan.

One job: when a request of an app whose model has exits is issued, draw its exit (one
uniform number from the app's own stream, :func:`~simulator.graph.exits.choose_exit`)
and give it that exit's view of its replica (:func:`~simulator.placement.exitplan.exit_plans`):
the request then runs only the ops of that view, so the engine stops it after its exit
without knowing about exits. A replica whose policy fixed the exit (``edgent``) runs its
plan as it is; its requests all record that exit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from simulator.engine.state import App, Replica, Request
from simulator.errors import PlacementError
from simulator.graph.exits import ExitModel, choose_exit, cumulative
from simulator.graph.model import ModelGraph
from simulator.placement.exitplan import exit_plans, fixed_exit
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle


class AppExits:
    """An app's exits in a run.

    Parameters
    ----------
    names : tuple of str
        The model's exits, ``final`` last.
    accuracy : tuple of float or None
        Top-1 (%) per exit.
    views : tuple, one per replica
        The replica's view per exit (``final`` last), or None when its plan fixed the exit.
    fixed : tuple, one per replica
        The index of the exit a replica's plan fixed (None where it draws).
    shares : tuple of float
        Share of requests per exit (the draw's distribution).
    """

    __slots__ = ("accuracy", "cum", "fixed", "names", "rng", "views")

    def __init__(
        self,
        names: tuple[str, ...],
        accuracy: tuple[float | None, ...],
        views: tuple[tuple[Replica, ...] | None, ...],
        fixed: tuple[int | None, ...],
        shares: Sequence[float],
    ):
        self.names = names
        self.accuracy = accuracy
        self.views = views
        self.fixed = fixed
        self.cum = cumulative(shares)
        self.rng: np.random.Generator | None = None

    def seed(self, seq: np.random.SeedSequence) -> None:
        """Draw exits from ``seq`` (the app's own stream for them)."""
        self.rng = np.random.default_rng(seq)

    def request(
        self, rid: int, app: App, rep: Replica, arrival_s: float, k: int | None = None
    ) -> Request:
        """Request ``rid`` of ``app`` on replica ``rep``, at the exit it draws (or ``k``,
        an attempt restarted on another replica keeps its exit)."""
        views = self.views[rep.index]
        if views is None:
            request = Request(rid, app, rep, arrival_s)
            request.exit = self.fixed[rep.index]
            return request
        if k is None:
            assert self.rng is not None, "seed() is called when the run starts"
            k = choose_exit(self.cum, self.rng.random())
        request = Request(rid, app, rep, arrival_s, views[k])
        request.exit = k
        return request


def app_exits(
    graph: ModelGraph,
    replicas: Sequence[Replica],
    oracle: CostOracle,
    replica: Callable[[int, ExecutionPlan], Replica],
) -> AppExits | None:
    """The exits of an app whose model is ``graph`` and whose ``replicas`` run their plans
    (None when neither the model nor a plan has exits); ``replica(index, plan)`` builds a
    replica's view of an early exit (the engine's :meth:`Engine._replica`); a replica is
    its own view of ``final``.

    Raises
    ------
    PlacementError
        When a placement rewrote the model (:func:`exit_plans`) or fixed an exit the
        model lacks.
    """
    fixed_names = [fixed_exit(rep.plan) for rep in replicas]
    if not isinstance(graph, ExitModel):
        if any(fixed_names):
            raise PlacementError(f"model '{graph.name}' declares no exits", "edgent")
        return None
    names = graph.exit_names
    views: list[tuple[Replica, ...] | None] = []
    fixed: list[int | None] = []
    for rep, name in zip(replicas, fixed_names, strict=True):
        if name is not None:
            views.append(None)
            fixed.append(names.index(name))
            continue
        mine = exit_plans(graph, rep.plan, oracle)
        assert mine is not None  # an exit model and no fixed exit
        views.append((*(replica(rep.index, view) for view in mine[:-1]), rep))
        fixed.append(None)
    return AppExits(names, graph.accuracies, tuple(views), tuple(fixed), graph.shares)
