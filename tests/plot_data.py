"""Small result tables for the plot tests (tests/analysis): a run and a sweep.

The sweep is the phone/cloud scenario of tests/conftest.py under ``split_point`` over
uplink bandwidth × one-way latency, with hand-computable cells: the phone runs the one
1 GFLOP op in 1 s; offloading costs 8 Mbit of input at the uplink bandwidth, 2 × the
latency, 1 ms on the cloud GPU and 4,000 B back at 20 Mbit/s (1.6 ms).
"""

from __future__ import annotations

import copy
import io

import matplotlib.image
import numpy as np
from conftest import phone_cloud_document

BANDWIDTH = "links.uplink.bandwidth_mbps"
LATENCY = "links.uplink.latency_ms"
BANDWIDTHS = (2, 10, 100)
LATENCIES = (20, 500)
# (bandwidth, latency) -> decision, latency in s (hand numbers, see the module docstring)
HAND = {
    (2, 20): ("device", 1.0),
    (2, 500): ("device", 1.0),
    (10, 20): ("cloud", 0.8 + 0.02 + 0.001 + 0.0016 + 0.02),
    (10, 500): ("device", 1.0),
    (100, 20): ("cloud", 0.08 + 0.02 + 0.001 + 0.0016 + 0.02),
    (100, 500): ("device", 1.0),
}


def split_document() -> dict:
    document = copy.deepcopy(phone_cloud_document())
    document["placement"] = {"policy": "split_point", "node": "cloud"}
    return document


def pixels(figure) -> np.ndarray:
    """The figure rendered as PNG and read back: an (h, w, 4) array in [0, 1]."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=50)
    assert buffer.getbuffer().nbytes > 1000
    buffer.seek(0)
    return matplotlib.image.imread(buffer, format="png")


def assert_drawn(figure) -> None:
    """Non-empty and not blank: the rendered pixels vary."""
    image = pixels(figure)
    assert image.shape[0] > 50 and image.shape[1] > 50
    assert image[..., :3].std() > 0.05
