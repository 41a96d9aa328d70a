"""Shared builders for small scenarios with hand-computable answers."""

from __future__ import annotations

import copy

import pytest

from simulator.spec import parse_scenario


def small_soc_document() -> dict:
    """One phone with a 1 GFLOP/s cpu and a 4 GFLOP/s gpu, a 3-op chain a -> b -> c.

    Hand numbers (see tests/engine/test_hand_computed.py): a = 1 ms on cpu, b = 0.5 ms
    on gpu, c = 1 ms on cpu; cross-unit edges pay 100 us sync + bytes / 1 GB/s.
    """
    return {
        "name": "small_soc",
        "seed": 1,
        "nodes": {
            "phone": {
                "role": "device",
                "sync_us": 100,
                "shared_memory_bandwidth_gb_s": 1,
                "units": {
                    "cpu": {
                        "kind": "cpu",
                        "peak_gflops": {"fp32": 1},
                        "efficiency": {"default": 1.0},  # peak: the hand numbers
                        "memory_bandwidth_gb_s": "unbounded",  # compute bound: the same
                        "idle_w": 0.1,
                        "active_w": 1.0,
                    },
                    "gpu": {
                        "kind": "gpu",
                        "peak_gflops": {"fp32": 4},
                        "efficiency": {"default": 1.0},  # peak: the hand numbers
                        "memory_bandwidth_gb_s": "unbounded",  # compute bound: the same
                        "idle_w": 0.2,
                        "active_w": 2.0,
                    },
                },
            }
        },
        "models": {
            "chain": {
                "ops": [
                    {
                        "name": "a",
                        "kind": "conv",
                        "flops": 1e6,
                        "params": 100,
                        "input_elems": 500,
                        "output_elems": 1000,
                    },
                    {"name": "b", "kind": "conv", "flops": 2e6, "output_elems": 500},
                    {"name": "c", "kind": "fc", "flops": 1e6, "output_elems": 10},
                ],
                "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
            }
        },
        "workload": [
            {
                "app": "app",
                "model": "chain",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 100},
                "count": 1,
            }
        ],
        "placement": {
            "policy": "manual",
            "rules": [{"ops": "b", "unit": "gpu"}],
            "default": "cpu",
        },
    }


def phone_cloud_nodes(cloud_gflops: float = 1000.0) -> dict:
    """A phone with a 1 GFLOP/s cpu and a cloud with one gpu; no idle or active power."""

    def at_peak_free() -> dict:  # said explicitly: no assumption warning
        return {
            "efficiency": {"default": 1.0},
            "idle_w": 0.0,
            "active_w": 0.0,
            "memory_bandwidth_gb_s": "unbounded",
        }

    return {
        "phone": {
            "role": "device",
            "units": {"cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}, **at_peak_free()}},
        },
        "cloud": {
            "role": "cloud",
            "units": {
                "gpu": {"kind": "gpu", "peak_gflops": {"fp32": cloud_gflops}, **at_peak_free()}
            },
        },
    }


def two_node_doc(link: dict, times_ms: list[float], input_bytes: int = 1_000_000) -> dict:
    """The cloud runs one instant op on a 1 MB input (``input_bytes``) sent from the phone
    over link ``up`` (8 Mbit/s, reverse 8000, no latency; ``link`` adds or replaces keys)."""
    return {
        "name": "links",
        "nodes": phone_cloud_nodes(1),
        "links": {
            "up": {
                "ends": ["phone", "cloud"],
                "latency_ms": 0,
                "bandwidth_mbps": 8,
                "reverse_bandwidth_mbps": 8000,
                **link,
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "custom",
                        "flops": 0,
                        "input_elems": input_bytes // 4,
                        "output_elems": 0,
                    }
                ]
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": times_ms},
            }
        ],
        "placement": {"policy": "offload", "node": "cloud"},
    }


def one_op_document(name: str, placement: dict, arrival: dict, **entry) -> dict:
    """A phone and a cloud (:func:`phone_cloud_nodes`) and no link; app 'a' runs one 1 MFLOP
    conv (1 ms on the phone's cpu) from the phone with ``placement`` and ``arrival``;
    ``entry`` adds keys to its workload entry (``count``, ``duration_s``, ``on_failure``)."""
    return {
        "name": name,
        "nodes": phone_cloud_nodes(),
        "models": {"m": {"ops": [{"name": "a", "kind": "conv", "flops": 1e6}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": arrival,
                "placement": placement,
                **entry,
            }
        ],
    }


def phone_cloud_document() -> dict:
    """A phone and a cloud over one 10/20 Mbit/s link with 20 ms latency and a radio."""
    return {
        "name": "phone_cloud",
        "seed": 3,
        "nodes": {
            "phone": {
                "role": "device",
                "units": {
                    "cpu": {
                        "kind": "cpu",
                        "peak_gflops": {"fp32": 1},
                        "efficiency": {"default": 1.0},  # peak: the hand numbers
                        "memory_bandwidth_gb_s": "unbounded",  # compute bound: the same
                        "idle_w": 0.1,
                        "active_w": 1.0,
                    }
                },
            },
            "cloud": {
                "role": "cloud",
                "units": {
                    "gpu": {
                        "kind": "gpu",
                        "peak_gflops": {"fp32": 1000},
                        "efficiency": {"default": 1.0},  # peak: the hand numbers
                        "memory_bandwidth_gb_s": "unbounded",  # compute bound: the same
                        "idle_w": 10,
                        "active_w": 50,
                    }
                },
            },
        },
        "links": {
            "uplink": {
                "ends": ["phone", "cloud"],
                "latency_ms": 20,
                "bandwidth_mbps": 10,
                "reverse_bandwidth_mbps": 20,
                "radio": {"tx_w": 2.0, "rx_w": 1.0, "idle_w": 0.1},
            }
        },
        "models": {
            "net": {
                "ops": [
                    {
                        "name": "big",
                        "kind": "conv",
                        "flops": 1e9,
                        "input_elems": 250000,
                        "output_elems": 1000,
                    }
                ]
            }
        },
        "workload": [
            {
                "app": "app",
                "model": "net",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 2000},
                "count": 1,
            }
        ],
        "placement": {"policy": "offload", "node": "cloud"},
    }


def build(document: dict, **changes):
    doc = copy.deepcopy(document)
    for key, value in changes.items():
        doc[key] = value
    return parse_scenario(doc)


@pytest.fixture
def small_soc():
    return small_soc_document()


@pytest.fixture
def phone_cloud():
    return phone_cloud_document()
