"""Network topology, links, routes and radios (pure)."""

from simulator.network.radio import RADIO_MODELS, Radio, TailStage, build_radio
from simulator.network.topology import BITS_PER_BYTE, Hop, Link, Network

__all__ = [
    "BITS_PER_BYTE",
    "RADIO_MODELS",
    "Hop",
    "Link",
    "Network",
    "Radio",
    "TailStage",
    "build_radio",
]
