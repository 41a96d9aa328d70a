"""Hypothesis strategies for random platforms, model DAGs and placements."""

from __future__ import annotations

from hypothesis import strategies as st

UNIT_KINDS = ("cpu", "gpu", "dsp", "npu")


@st.composite
def impairments(draw) -> dict:
    """Random link keys: a bandwidth distribution (return direction), jitter, loss."""
    keys: dict = {}
    if draw(st.booleans()):
        keys["reverse_bandwidth_distribution"] = {
            "dist": draw(st.sampled_from(("lognormal", "gamma", "normal", "uniform"))),
            "mean_mbps": draw(st.floats(1, 100)),
            "cv": draw(st.floats(0.05, 0.5)),
            "hold_ms": draw(st.floats(0.5, 50)),
        }
    if draw(st.booleans()):
        keys["jitter"] = draw(
            st.sampled_from(
                (
                    {"dist": "exponential", "mean_ms": 5},
                    {"dist": "uniform", "max_ms": 30},
                    {"dist": "normal_truncated", "mean_ms": 2, "std_ms": 10},
                )
            )
        )
    if draw(st.booleans()):
        keys["loss_rate"] = draw(st.floats(0, 0.3))
        keys["mtu_bytes"] = draw(st.integers(100, 9000))
    return keys


@st.composite
def scenarios(
    draw, max_ops: int = 10, requests: int | None = None, power_management: bool = False
) -> dict:
    """A random valid scenario document: a phone (2-3 units), maybe a cloud, a DAG.

    With ``power_management``, phone units may have DVFS (a random governor) and the
    phone a fast thermal model (throttling within milliseconds).
    """
    n_units = draw(st.integers(2, 3))
    units = {}
    for k in range(n_units):
        cores = draw(st.integers(1, 4))
        units[f"u{k}"] = {
            "kind": UNIT_KINDS[k],
            "cores": cores,
            "cores_per_op": draw(st.integers(1, cores)),
            "barrier_us": draw(st.floats(0, 20)),
            "peak_gflops": {"fp32": draw(st.floats(0.5, 50))},
            "memory_bandwidth_gb_s": draw(st.floats(1, 50)),
            "dispatch_us": draw(st.floats(0, 50)),
            "idle_w": draw(st.floats(0, 0.5)),
            "active_w": draw(st.floats(0.5, 4)),
        }
        if power_management and draw(st.booleans()):
            units[f"u{k}"].update(_dvfs(draw, units[f"u{k}"]))
    nodes = {
        "phone": {
            **({"battery_wh": draw(st.floats(1e-7, 1e-4))} if draw(st.booleans()) else {}),
            "role": "device",
            "sync_us": draw(st.floats(0, 300)),
            "shared_memory_bandwidth_gb_s": draw(st.floats(0.5, 20)),
            # below the units' own: ops stall on shared DRAM even when alone
            **({"dram_bandwidth_gb_s": draw(st.floats(1, 100))} if draw(st.booleans()) else {}),
            "units": units,
        }
    }
    if power_management and draw(st.booleans()):
        ambient = draw(st.floats(20, 30))
        nodes["phone"]["thermal"] = {
            "resistance_k_per_w": draw(st.floats(1, 20)),
            "capacitance_j_per_k": draw(st.floats(1e-4, 1e-1)),
            "ambient_c": ambient,
            "release_c": ambient + draw(st.floats(0.5, 3)),
            "throttle_c": ambient + draw(st.floats(3.5, 10)),
        }
    links = {}
    if draw(st.booleans()):
        nodes["cloud"] = {
            "role": "cloud",
            "units": {
                "gpu": {
                    "kind": "gpu",
                    "peak_gflops": {"fp32": draw(st.floats(100, 5000))},
                    "idle_w": draw(st.floats(0, 50)),
                    "active_w": draw(st.floats(50, 300)),
                }
            },
        }
        links["up"] = {
            "ends": ["phone", "cloud"],
            "latency_ms": draw(st.floats(0, 50)),
            "bandwidth_mbps": draw(st.floats(1, 100)),
            "reverse_bandwidth_mbps": draw(st.floats(1, 100)),
            "radio": {
                "tx_w": draw(st.floats(1, 4)),
                "rx_w": draw(st.floats(0.5, 2)),
                "idle_w": draw(st.floats(0, 0.2)),
            },
            "sharing": draw(st.sampled_from(("fifo", "fair"))),
        }
        if draw(st.booleans()):
            start = draw(st.floats(0, 0.05))
            links["up"]["outages_s"] = [[start, start + draw(st.floats(1e-4, 0.05))]]
        if draw(st.booleans()):
            links["up"]["bandwidth_trace_mbps"] = [
                [0, draw(st.floats(1, 100))],
                [draw(st.floats(1e-3, 0.1)), draw(st.floats(1, 100))],
            ]
        links["up"].update(draw(impairments()))
    unit_ids = [f"phone.{u}" for u in units] + (["cloud.gpu"] if "cloud" in nodes else [])
    n_ops = draw(st.integers(1, max_ops))
    ops, edges, rules = [], [], []
    for j in range(n_ops):
        ops.append(
            {
                "name": f"op{j}",
                "kind": draw(st.sampled_from(("conv", "fc", "elementwise", "pool"))),
                "flops": draw(st.floats(1e3, 1e8)),
                "params": draw(st.integers(0, 100_000)),
                "input_elems": draw(st.integers(0, 200_000)),
                "output_elems": draw(st.integers(0, 200_000)),
                "parallel_fraction": draw(st.floats(0, 1)),
            }
        )
        if j:
            preds = draw(st.sets(st.integers(0, j - 1), max_size=3))
            edges += [{"src": f"op{i}", "dst": f"op{j}"} for i in sorted(preds)]
        rules.append({"ops": f"op{j}", "unit": draw(st.sampled_from(unit_ids))})
    count = requests if requests is not None else draw(st.integers(1, 6))
    arrival = (
        {"process": "poisson", "rate_hz": draw(st.floats(1, 500))}
        if draw(st.booleans())
        else {"process": "periodic", "period_ms": draw(st.floats(0.1, 50))}
    )
    return {
        "name": "random",
        "seed": draw(st.integers(0, 2**32 - 1)),
        "nodes": nodes,
        "links": links,
        "models": {"m": {"ops": ops, "edges": edges}},
        "workload": [
            {"app": "a", "model": "m", "source": "phone", "arrival": arrival, "count": count}
        ],
        "placement": {"policy": "manual", "rules": rules, "default": unit_ids[0]},
        "scheduler": draw(st.sampled_from(("fcfs", "ready_order", "priority", "edf"))),
    }


#: Two operating points: the low one draws 0.49 / 2 = 0.245 of the top's dynamic power.
DVFS_POINTS = [{"mhz": 1000, "mv": 700}, {"mhz": 2000, "mv": 1000}]


def _dvfs(draw, unit: dict) -> dict:
    """A ``dvfs:`` block for ``unit``, and an ``idle_w`` the low point can afford."""
    static_w = draw(st.floats(0, 0.4))
    governor = draw(
        st.sampled_from(
            (
                {"name": "performance"},
                {"name": "powersave"},
                {"name": "fixed", "level": draw(st.integers(0, 1))},
                {"name": "ondemand", "window_ms": draw(st.floats(0.1, 20))},
                {"name": "schedutil", "window_ms": draw(st.floats(0.1, 20))},
            )
        )
    )
    low_w = static_w + (unit["active_w"] - static_w) * 0.245
    return {
        "idle_w": min(unit["idle_w"], low_w * 0.99),  # margin for float rounding
        "dvfs": {"points": DVFS_POINTS, "static_w": static_w, "governor": governor},
    }
