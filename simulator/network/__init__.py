"""Network topology, links, routes and radios (pure)."""

from simulator.network.topology import BITS_PER_BYTE, Hop, Link, Network, Radio

__all__ = ["BITS_PER_BYTE", "Hop", "Link", "Network", "Radio"]
