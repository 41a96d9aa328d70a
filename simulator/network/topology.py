"""Links between nodes, routes over them, and contention-free transfer times (pure)."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from simulator.errors import SocsimError
from simulator.network.impairments import BandwidthDistribution, Jitter
from simulator.network.medium import FAIRNESS
from simulator.network.mobility import Coverage
from simulator.network.radio_power import Radio
from simulator.rules import link_ends_known, raise_first

BITS_PER_BYTE = 8
SHARING: tuple[str, ...] = ("fifo", "fair")


@dataclass(frozen=True)
class Link:
    """A link between nodes ``a`` and ``b``.

    Attributes
    ----------
    latency_s : float
        One-way propagation latency, paid per hop after serialisation.
    bandwidth_bps : float
        ``a -> b`` bandwidth in bits/s.
    reverse_bandwidth_bps : float
        ``b -> a`` bandwidth in bits/s.
    radio : Radio or None
        Radio power drawn at each end whose node is a device.
    sharing : str
        ``fifo`` (one transfer at a time per direction) or ``fair`` (concurrent
        transfers share the bandwidth equally).
    bandwidth_trace, reverse_bandwidth_trace : tuple of (time_s, bandwidth_bps)
        Bandwidth over time per direction (each value holds until the next time);
        empty means the constant bandwidth. Placement estimates use the constant.
    outages : tuple of (start_s, end_s)
        Intervals when the link carries nothing in either direction (transfers wait).
    bandwidth_distribution, reverse_bandwidth_distribution : BandwidthDistribution or None
        Random capacity per direction (instead of the constant or a trace).
    jitter : Jitter or None
        Extra propagation delay per hop, both directions.
    loss_rate : float
        Probability that a packet is lost (it is re-sent; see ``impairments``).
    mtu_bytes : int
        Packet size that ``loss_rate`` applies to.
    coverage : Coverage or None
        A mobile link's rate over time and handovers (``simulator.network.mobility``):
        its steps are both directions' traces and its interruptions are in ``outages``.
    medium : str
        Non-empty for a station's link to a shared medium (``kind: shared``; ``a`` is the
        station, ``b`` the access point): both directions share the medium's airtime
        with every other station's (:mod:`simulator.network.medium`); the bandwidths
        are the station's rates alone on the medium.
    fairness : str
        How the medium divides its airtime (:data:`~simulator.network.medium.FAIRNESS`).
    """

    name: str
    a: str
    b: str
    latency_s: float
    bandwidth_bps: float
    reverse_bandwidth_bps: float
    radio: Radio | None = None
    technology: str = ""
    sharing: str = "fifo"
    bandwidth_trace: tuple[tuple[float, float], ...] = ()
    reverse_bandwidth_trace: tuple[tuple[float, float], ...] = ()
    outages: tuple[tuple[float, float], ...] = ()
    bandwidth_distribution: BandwidthDistribution | None = None
    reverse_bandwidth_distribution: BandwidthDistribution | None = None
    jitter: Jitter | None = None
    loss_rate: float = 0.0
    mtu_bytes: int = 1500
    coverage: Coverage | None = None
    medium: str = ""
    fairness: str = "throughput"

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise SocsimError(f"link '{self.name}' joins node '{self.a}' to itself")
        if math.isnan(self.latency_s) or self.latency_s < 0:
            raise SocsimError(f"link '{self.name}': latency must be >= 0")
        if not (self.bandwidth_bps > 0 and self.reverse_bandwidth_bps > 0):
            raise SocsimError(f"link '{self.name}': bandwidths must be > 0")
        if self.sharing not in SHARING:
            raise SocsimError(f"link '{self.name}': sharing must be one of {SHARING}")
        for label in ("bandwidth_trace", "reverse_bandwidth_trace", "outages"):
            object.__setattr__(self, label, tuple(tuple(p) for p in getattr(self, label)))
        for label in ("bandwidth_trace", "reverse_bandwidth_trace"):
            trace = getattr(self, label)
            times = [t for t, _ in trace]
            if times != sorted(times) or any(b < 0 or not math.isfinite(b) for _, b in trace):
                raise SocsimError(
                    f"link '{self.name}': {label} needs increasing times and bandwidths >= 0"
                )
            if trace and trace[-1][1] <= 0:
                raise SocsimError(
                    f"link '{self.name}': {label} must end with a bandwidth > 0 "
                    "(transfers would wait forever)"
                )
        for start, end in self.outages:
            if not (0 <= start < end < math.inf):
                raise SocsimError(f"link '{self.name}': an outage needs 0 <= start < end, finite")
        for label in ("bandwidth", "reverse_bandwidth"):
            if getattr(self, f"{label}_trace") and getattr(self, f"{label}_distribution"):
                raise SocsimError(
                    f"link '{self.name}': give {label}_trace or {label}_distribution, not both"
                )
        if not 0 <= self.loss_rate < 1:
            raise SocsimError(f"link '{self.name}': loss_rate must be in [0, 1)")
        if self.mtu_bytes < 1:
            raise SocsimError(f"link '{self.name}': mtu_bytes must be >= 1")
        if self.fairness not in FAIRNESS:
            raise SocsimError(f"link '{self.name}': fairness must be one of {FAIRNESS}")

    @property
    def stochastic(self) -> bool:
        """True when a random bandwidth, jitter or loss makes the link's timing random."""
        randoms = (self.bandwidth_distribution, self.reverse_bandwidth_distribution, self.jitter)
        return any(r is not None for r in randoms) or self.loss_rate > 0

    def capacity_steps(self, src: str) -> tuple[tuple[float, float], ...]:
        """The direction leaving ``src`` as (time_s, bits/s) steps, outages included.

        One pass over the sorted change times with binary searches: O(n log n) for n
        trace rows and outages (the pairwise scan before took 395 s for 100 k rows).
        """
        trace = self.bandwidth_trace if src == self.a else self.reverse_bandwidth_trace
        base = list(trace) or [(0.0, self.bandwidth_from(src))]
        if base[0][0] > 0:
            base.insert(0, (0.0, base[0][1]))
        base_times = [t for t, _ in base]  # sorted (checked); the last of equal times wins
        starts = sorted(start for start, _ in self.outages)
        ends = sorted(end for _, end in self.outages)
        times = sorted({*base_times, *starts, *ends})
        steps: list[tuple[float, float]] = []
        for t in times:
            # outages with start <= t < end: started by t, minus ended by t (start < end)
            down = bisect.bisect_right(starts, t) > bisect.bisect_right(ends, t)
            bps = 0.0 if down else base[max(bisect.bisect_right(base_times, t) - 1, 0)][1]
            if not steps or steps[-1][1] != bps:
                steps.append((t, bps))
        return tuple(steps)

    def bandwidth_from(self, src: str) -> float:
        """Bandwidth (bits/s) of the direction that leaves ``src``."""
        if src == self.a:
            return self.bandwidth_bps
        if src == self.b:
            return self.reverse_bandwidth_bps
        raise SocsimError(f"node '{src}' is not an end of link '{self.name}'")


@dataclass(frozen=True)
class Hop:
    """One directed step of a route: ``link`` crossed from ``src`` to ``dst``."""

    link: str
    src: str
    dst: str
    latency_s: float
    bandwidth_bps: float
    #: the part of ``latency_s`` that comes before serialisation: all of it on a hop
    #: that only a receiving device's radio takes part in (a download: the radio
    #: connects when the first bytes reach the phone, and its tail starts when the last
    #: ones have), else 0
    lead_s: float = 0.0

    def serialise_s(self, nbytes: float) -> float:
        """Time (s) to put ``nbytes`` on this hop at its bandwidth."""
        return nbytes * BITS_PER_BYTE / self.bandwidth_bps

    def time_s(self, nbytes: float) -> float:
        """Serialisation plus propagation of ``nbytes`` over this hop (s)."""
        return self.serialise_s(nbytes) + self.latency_s


class Network:
    """The topology: nodes joined by links; routes are least-latency paths.

    Parameters
    ----------
    nodes : iterable of str
    links : iterable of Link
    devices : iterable of str
        The nodes whose link radios are modelled (role ``device``): a hop into one of
        them from a node that is not one is a download (``Hop.lead_s``).

    Raises
    ------
    SocsimError
        On a link naming an unknown node or two links joining the same pair of nodes.
    """

    def __init__(self, nodes: Iterable[str], links: Iterable[Link], devices: Iterable[str] = ()):
        self._devices = frozenset(devices)  # nodes whose radios are modelled
        graph = nx.Graph()
        graph.add_nodes_from(nodes)
        self.links: dict[str, Link] = {}
        for link in links:
            raise_first(link_ends_known(link.name, (link.a, link.b), graph.nodes))
            if graph.has_edge(link.a, link.b):
                other = graph.edges[link.a, link.b]["link"].name
                raise SocsimError(f"links '{other}' and '{link.name}' join the same nodes")
            graph.add_edge(link.a, link.b, link=link, latency_s=link.latency_s)
            self.links[link.name] = link
        self._graph = graph
        self._routes: dict[tuple[str, str], tuple[Hop, ...]] = {}

    @property
    def graph(self) -> nx.Graph:
        return self._graph

    def reachable(self, src: str) -> frozenset[str]:
        """The nodes some route joins to node ``src`` (``src`` included)."""
        return frozenset(nx.node_connected_component(self._graph, src))

    def route(self, src: str, dst: str) -> tuple[Hop, ...]:
        """Hops from ``src`` to ``dst`` along the least-latency path (empty when equal).

        Raises
        ------
        SocsimError
            When no path joins the two nodes.
        """
        key = (src, dst)
        if key not in self._routes:
            self._routes[key] = self._find_route(src, dst)
        return self._routes[key]

    def _find_route(self, src: str, dst: str) -> tuple[Hop, ...]:
        for node in (src, dst):
            if node not in self._graph:
                raise SocsimError(
                    f"unknown node '{node}' in a route; nodes: {', '.join(self._graph.nodes)}"
                )
        if src == dst:
            return ()
        try:
            path = nx.shortest_path(self._graph, src, dst, weight="latency_s")
        except nx.NetworkXNoPath:
            raise SocsimError(f"no network route from node '{src}' to node '{dst}'") from None
        hops = []
        for u, v in itertools.pairwise(path):
            link = self._graph.edges[u, v]["link"]
            download = link.radio is not None and v in self._devices and u not in self._devices
            lead_s = link.latency_s if download else 0.0
            hops.append(Hop(link.name, u, v, link.latency_s, link.bandwidth_from(u), lead_s))
        return tuple(hops)

    def transfer_time_s(self, nbytes: float, src: str, dst: str) -> float:
        """Contention-free store-and-forward time (s) of ``nbytes`` from ``src`` to ``dst``."""
        return sum(hop.time_s(nbytes) for hop in self.route(src, dst))
