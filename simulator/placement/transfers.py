"""A tensor move as the estimate sees it: when it arrives, what its radios draw (pure).

Without contention, hop by hop in the engine's order (:func:`arrival_s`), so that a
lone request's estimate equals the engine bit for bit. A hop through a stateful radio
follows the radio's state machine in closed form (:class:`RadioUse`): the promotion a
transfer pays from idle or from a tail stage, the tail between transfers and one full
tail after the last. :func:`radio_energy_j` is a move's serialisation energy at its
device ends; observed bandwidths (:class:`~simulator.placement.conditions.Conditions`)
replace the nominal ones where given.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, overload

from simulator.network.radio_power import Radio
from simulator.network.topology import BITS_PER_BYTE
from simulator.placement.conditions import NOMINAL, Conditions
from simulator.placement.plan import Move
from simulator.platform import CostOracle

if TYPE_CHECKING:  # only annotations name them: the module computes with floats
    import numpy as np
    from numpy.typing import NDArray


def move_time_s(move: Move) -> float:
    """Contention-free duration (s) of one move."""
    return move.transfer.time_s(move.nbytes)


def _device_radios(hop, oracle: CostOracle):
    """(node, radio) of every device end of the hop's link that has a radio."""
    platform = oracle.platform
    radio = platform.network.links[hop.link].radio
    if radio is None:
        return ()
    return tuple((n, radio) for n in (hop.src, hop.dst) if platform.role_of(n) == "device")


class RadioUse:
    """What the estimate knows of one stateful radio during one request.

    It follows the radio's state machine in closed form: when its last transfer ended,
    hence which tail stage (or idle) a new transfer finds and which promotion it pays,
    and the promotion and tail energy drawn so far. Exact when the request's transfers
    on the radio are met in time order (a chain of moves, as offloading plans are).
    """

    __slots__ = ("busy", "energy_j", "radio", "released_s")

    def __init__(self, radio: Radio, tail_began_s: float | None = None):
        """``tail_began_s``: when the radio's current tail began (before the request:
        negative), ``inf`` for a radio busy with other transfers, None for idle."""
        self.radio = radio
        # a radio met busy (carrying other transfers) stays connected throughout, and
        # the tail after them is theirs; one met in its tail has paid that tail so far
        self.busy = tail_began_s == math.inf
        self.released_s: float | None = math.inf if self.busy else tail_began_s
        self.energy_j = 0.0  # promotion and tail energy (J) so far
        if tail_began_s is not None and not self.busy:
            self.energy_j = -radio.tail_energy_j(-tail_began_s)  # sunk before t = 0

    def connect(self, t: float) -> float:
        """A transfer asks for the radio at ``t``: when it is connected (after a promotion)."""
        radio, released_s = self.radio, self.released_s
        if released_s is not None and t < released_s:
            return t  # still carrying an earlier transfer: connected
        if released_s is not None:
            self.energy_j += radio.tail_energy_j(t - released_s)  # the tail it sat in
        delay_s, power_w = radio.promotion(radio.stage_at(released_s, t))
        self.energy_j += power_w * delay_s
        return t + delay_s

    def hold(self, connected_s: float, start_s: float, end_s: float) -> None:
        """Connected from ``connected_s``, serialising ``start_s`` -> ``end_s``."""
        # waiting connected for the hop's other radio: base power, no throughput
        self.energy_j += self.radio.connected_power_w(0.0, 0.0) * (start_s - connected_s)
        self.released_s = end_s if self.released_s is None else max(self.released_s, end_s)

    def finish_j(self) -> float:
        """Everything it cost, with one full tail after the last transfer (J)."""
        if self.busy:
            return self.energy_j
        return self.energy_j + self.radio.tail_energy_j(math.inf)


def _serialise_s(hop, nbytes: float, conditions: Conditions) -> float:
    observed = conditions.bandwidth_bps.get((hop.link, hop.src))
    if observed is None:
        return hop.serialise_s(nbytes)
    if observed <= 0:
        return math.inf if nbytes else 0.0
    return nbytes * BITS_PER_BYTE / observed


@overload
def arrival_s(
    move: Move,
    start_s: float,
    oracle: CostOracle | None = None,
    radios: dict | None = None,
    conditions: Conditions = NOMINAL,
) -> float: ...


@overload
def arrival_s(
    move: Move,
    start_s: NDArray[np.float64],
    oracle: CostOracle | None = None,
    radios: None = None,
    conditions: Conditions = NOMINAL,
) -> NDArray[np.float64]: ...


def arrival_s(
    move: Move,
    start_s: float | NDArray[np.float64],
    oracle: CostOracle | None = None,
    radios: dict | None = None,
    conditions: Conditions = NOMINAL,
) -> float | NDArray[np.float64]:
    """When a move started at ``start_s`` arrives, without contention.

    Adds hop by hop (serialise, then propagate; a download propagates first,
    ``Hop.lead_s``) in the engine's order, so that the estimate equals the engine bit
    for bit. With ``oracle`` and ``radios`` ((link, node)
    -> :class:`RadioUse`, filled as hops meet radios), a hop through a stateful radio
    waits for the promotion the radio's state calls for (from idle, or from a tail stage
    such as UMTS FACH) and the radio's tail starts when the hop has serialised.
    Without ``radios``, ``start_s`` may be an array of start times (one per cut, in
    :func:`~simulator.placement.splitcurve.prefix_cut_estimates`): each arrives by the
    same additions, elementwise.
    """
    if not move.hops:
        return start_s + move.fixed_delay_s
    t = start_s
    for hop in move.hops:
        # a download propagates first: its radio connects when the first bytes reach
        # the device (``Hop.lead_s``; 0 otherwise, and t + 0.0 is t)
        t += hop.lead_s
        if radios is None:
            t += _serialise_s(hop, move.nbytes, conditions)
            t += hop.latency_s - hop.lead_s
            continue
        held = []
        assert oracle is not None  # radios are given with the oracle that finds them
        for node, radio in _device_radios(hop, oracle):
            if radio.stateful:
                use = radios.setdefault((hop.link, node), RadioUse(radio))
                held.append((use, use.connect(t)))
        t = max([t, *(connected for _, connected in held)])
        end = t + _serialise_s(hop, move.nbytes, conditions)
        for use, connected in held:
            use.hold(connected, t, end)
        t = end
        t += hop.latency_s - hop.lead_s
    return t


def radio_energy_j(move: Move, oracle: CostOracle, conditions: Conditions = NOMINAL) -> float:
    """Radio energy (J) of a move's serialisation at its device ends (no promotion, no tail)."""
    total = 0.0
    for hop in move.hops:
        seconds = _serialise_s(hop, move.nbytes, conditions)
        bps = conditions.bandwidth_bps.get((hop.link, hop.src), hop.bandwidth_bps)
        if not seconds or not math.isfinite(seconds):
            total += math.inf if seconds else 0.0
            continue
        for node, radio in _device_radios(hop, oracle):
            up, down = (bps, 0.0) if node == hop.src else (0.0, bps)
            total += radio.connected_power_w(up, down) * seconds
    return total
