"""What a run-time decision knows that the nominal platform does not, and what a run saw.

:class:`Conditions` (observed link bandwidths, work queued per unit, awake radios,
declared load factors) and :class:`Observed` (op and move times seen in a run) are the
inputs that turn the pure list-schedule estimate (:func:`simulator.placement.estimate.estimate`)
from a lone request's prediction on an idle platform into a run-time one or into a
replay of a simulated request. :data:`NOMINAL` is the idle platform.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator.frozen import FrozenMap


@dataclass(frozen=True)
class Conditions:
    """What a run-time decision knows that the nominal platform does not (SI units).

    Attributes
    ----------
    bandwidth_bps : Mapping of (link, src node) -> bit/s
        Observed bandwidth of a link direction; directions not listed use the link's
        nominal bandwidth.
    unit_free_s : Mapping of unit id -> s
        Earliest time (from the request's arrival) a unit can start this request's
        first op on it: the work already queued or reserved there (a run-time snapshot:
        the rest of the op it runs, its queue, and the ops of requests in flight placed
        on it that are not ready yet). Only the request's first op on the unit waits.
    radio_tail_s : Mapping of (link, node) -> s
        Stateful radios that are not idle: how long ago each one's tail began
        (``-inf`` for a radio that is carrying transfers). The estimate follows the
        state machine from there: a radio still connected pays no promotion, one in a
        tail stage pays that stage's promotion; idle radios are not listed.
    load_factor : Mapping of unit id -> factor
        Neurosurgeon's K_load (> 0): each op on a listed unit lasts ``factor`` times its
        plan duration in the estimate (its energy is unchanged: the op runs as long, it
        is the request that waits). :func:`declared_load` reads it from the nodes'
        ``load_factor``.
    """

    bandwidth_bps: Mapping[tuple[str, str], float] = field(default_factory=FrozenMap)
    unit_free_s: Mapping[str, float] = field(default_factory=FrozenMap)
    radio_tail_s: Mapping[tuple[str, str], float] = field(default_factory=FrozenMap)
    load_factor: Mapping[str, float] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        for key, bps in self.bandwidth_bps.items():
            if not bps >= 0:
                raise ValueError(f"observed bandwidth of {key} must be >= 0, got {bps}")
        object.__setattr__(self, "bandwidth_bps", FrozenMap(self.bandwidth_bps))
        object.__setattr__(self, "unit_free_s", FrozenMap(self.unit_free_s))
        object.__setattr__(self, "radio_tail_s", FrozenMap(self.radio_tail_s))
        for uid, factor in self.load_factor.items():
            if not (factor > 0 and math.isfinite(factor)):
                raise ValueError(f"load factor of '{uid}' must be > 0, got {factor}")
        object.__setattr__(self, "load_factor", FrozenMap(self.load_factor))


NOMINAL = Conditions()


def declared_load(platform) -> dict[str, float]:
    """Unit id -> the ``load_factor`` of its node, for the nodes that declare one != 1."""
    return {
        uid: platform.node_of(uid).load_factor
        for uid in platform.unit_ids
        if platform.node_of(uid).load_factor != 1.0
    }


@dataclass(frozen=True)
class Observed:
    """Times seen in a run, to replay one request's list schedule with them (SI units).

    Attributes
    ----------
    op_s : tuple of (float or None)
        Per op of the plan, the time it ran for (None: the estimate's own).
    move_s : Mapping of (src op index or None, dst unit or None) -> s
        Per network move, the time from leaving its producer (or the request's arrival)
        to arriving (waits for a radio or a busy link, serialisation, propagation);
        moves not listed use the estimate's.
    """

    op_s: tuple[float | None, ...]
    move_s: Mapping[tuple[int | None, str | None], float] = field(default_factory=FrozenMap)
