"""Small sweep scenarios written to a temporary folder."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from conftest import phone_cloud_document


def write_sweep(folder: Path, sweep: dict, **changes) -> Path:
    """The phone -> cloud scenario of tests/conftest.py with a ``sweep:`` section.

    Placement ``split_point`` between the phone cpu and the cloud gpu, one request.
    """
    document = copy.deepcopy(phone_cloud_document())
    document["placement"] = {"policy": "split_point", "device": "cpu", "node": "cloud"}
    document.update(changes)
    if sweep is not None:
        document["sweep"] = sweep
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture
def bandwidth_sweep(tmp_path) -> Path:
    """Four uplink bandwidths x two replicates, serial."""
    return write_sweep(
        tmp_path,
        {
            "parameters": {"links.uplink.bandwidth_mbps": [1, 10, 100, 1000]},
            "replicates": 2,
            "executor": {"name": "serial"},
        },
    )
