"""An edge server shared by many devices: its queue shows in every device's latency.

Hand numbers: each of three phones has its own 80 Mbit/s link (no latency) to the edge
and sends a 1 MB input at t = 0: 0.1 s each, in parallel. The edge gpu (1 TFLOP/s) runs
the 50 GFLOP op in 50 ms, one request at a time, earliest request first. So the phones
see 0.15, 0.20 and 0.25 s, and the gpu's queue wait is 0, 50 and 100 ms.
"""

from __future__ import annotations

import pytest

from simulator.engine import simulate
from simulator.spec import parse_scenario

PHONES = ("p0", "p1", "p2")


def shared_edge_doc() -> dict:
    phone = {"role": "device", "units": {"cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}}}}
    return {
        "name": "shared_edge",
        "nodes": {
            **{name: phone for name in PHONES},
            "edge": {
                "role": "edge",
                "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 1000}}},
            },
        },
        "links": {
            f"l{i}": {
                "ends": [name, "edge"],
                "latency_ms": 0,
                "bandwidth_mbps": 80,
                "reverse_bandwidth_mbps": 80,
            }
            for i, name in enumerate(PHONES)
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "x",
                        "kind": "conv",
                        "flops": 5e10,
                        "input_elems": 250_000,
                        "output_elems": 0,
                    }
                ]
            }
        },
        "workload": [
            {
                "app": f"cam{i}",
                "model": "m",
                "source": name,
                "arrival": {"process": "trace", "times_ms": [0]},
            }
            for i, name in enumerate(PHONES)
        ],
        "placement": {"policy": "offload", "node": "edge"},
    }


def test_the_servers_queue_adds_to_each_devices_latency():
    result = simulate(parse_scenario(shared_edge_doc()))
    requests = result.requests.sort_values("request_id")
    assert requests["latency_s"].tolist() == pytest.approx([0.15, 0.20, 0.25], rel=1e-12)
    ops = result.ops.sort_values("request_id")
    waits = (ops["start_s"] - ops["ready_s"]).tolist()
    assert waits == pytest.approx([0.0, 0.05, 0.10], abs=1e-12)
    edge = result.units.set_index("unit").loc["edge.gpu"]
    assert edge["queue_wait_mean_s"] == pytest.approx(0.05, rel=1e-12)
    assert edge["queue_wait_max_s"] == pytest.approx(0.10, rel=1e-12)
