"""Links between nodes, routes over them, and contention-free transfer times (pure)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from simulator.errors import SocsimError
from simulator.network.radio import Radio

BITS_PER_BYTE = 8


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
    """

    name: str
    a: str
    b: str
    latency_s: float
    bandwidth_bps: float
    reverse_bandwidth_bps: float
    radio: Radio | None = None
    technology: str = ""

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise SocsimError(f"link '{self.name}' joins node '{self.a}' to itself")
        if math.isnan(self.latency_s) or self.latency_s < 0:
            raise SocsimError(f"link '{self.name}': latency must be >= 0")
        if not (self.bandwidth_bps > 0 and self.reverse_bandwidth_bps > 0):
            raise SocsimError(f"link '{self.name}': bandwidths must be > 0")

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

    def serialise_s(self, nbytes: float) -> float:
        """Time (s) to put ``nbytes`` on this hop at its bandwidth."""
        return nbytes * BITS_PER_BYTE / self.bandwidth_bps

    def time_s(self, nbytes: float) -> float:
        """Serialisation plus propagation of ``nbytes`` over this hop (s)."""
        return self.serialise_s(nbytes) + self.latency_s


class Network:
    """The topology: nodes joined by links; routes are least-latency paths.

    Raises
    ------
    SocsimError
        On a link naming an unknown node or two links joining the same pair of nodes.
    """

    def __init__(self, nodes: Iterable[str], links: Iterable[Link]):
        graph = nx.Graph()
        graph.add_nodes_from(nodes)
        self.links: dict[str, Link] = {}
        for link in links:
            for end in (link.a, link.b):
                if end not in graph:
                    raise SocsimError(f"link '{link.name}' names unknown node '{end}'")
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
            hops.append(Hop(link.name, u, v, link.latency_s, link.bandwidth_from(u)))
        return tuple(hops)

    def transfer_time_s(self, nbytes: float, src: str, dst: str) -> float:
        """Contention-free store-and-forward time (s) of ``nbytes`` from ``src`` to ``dst``."""
        return sum(hop.time_s(nbytes) for hop in self.route(src, dst))
