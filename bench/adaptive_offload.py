"""Adaptive offloading against every static choice, on the shipped swinging-trace example.

Runs ``scenarios/examples/adaptive_offload.yaml`` as shipped (``dispatch: adaptive``) and
once per candidate pinned as a static placement, and prints one row each: latency mean /
p50 / p95, device energy per inference, how many frames fell back, and the mean latency
per phase of the trace (fast, slow, outage). The figures in ``docs/adaptive.md`` come
from this script::

    python bench/adaptive_offload.py [SCENARIO]
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import pandas as pd
import yaml

from simulator import simulate
from simulator.spec import parse_scenario

EXAMPLE = Path(__file__).resolve().parents[1] / "scenarios/examples/adaptive_offload.yaml"


#: sensitivity rows: (ewma_alpha, transfer_timeout_ms, stale_ms) replacing the shipped ones
SENSITIVITY = (
    (0.3, 800, 10000),
    (0.5, 800, 10000),
    (1.0, 800, 10000),
    (0.8, 400, 10000),
    (0.8, 1600, 10000),
    (0.8, None, 10000),
    (0.8, 800, 3000),
    (0.8, 800, 30000),
)


def variants(document: dict) -> dict[str, dict]:
    """The shipped adaptive document, its sensitivity variants, one static per candidate."""
    out = {"adaptive": document}
    for alpha, timeout_ms, stale_ms in SENSITIVITY:
        other = copy.deepcopy(document)
        entry = other["workload"][0]
        entry["adaptive"].update(ewma_alpha=alpha, stale_ms=stale_ms)
        if timeout_ms is None:
            entry.pop("transfer_timeout_ms", None)
        else:
            entry["transfer_timeout_ms"] = timeout_ms
        out[f"adaptive a={alpha} t={timeout_ms} s={stale_ms}"] = other
    app = document["workload"][0]
    for k, spec in enumerate(app["replicas"]):
        static = copy.deepcopy(document)
        entry = static["workload"][0]
        for key in ("replicas", "dispatch", "adaptive", "transfer_timeout_ms"):
            entry.pop(key, None)
        entry["placement"] = spec
        out[f"static {k}"] = static
    return out


def phase_of(t: float, trace: list, outages: list) -> str:
    if any(a <= t < b for a, b in outages):
        return "outage"
    bps = [b for start, b in trace if start <= t][-1]
    return "fast" if bps >= max(b for _, b in trace) else "slow"


def run(path: Path) -> pd.DataFrame:
    document = yaml.safe_load(path.read_text())
    link = next(iter(document["links"].values()))
    trace, outages = link["bandwidth_trace_mbps"], link.get("outages_s", [])
    rows = []
    for name, doc in variants(document).items():
        result = simulate(parse_scenario(doc, base_dir=path.parent))  # includes resolve there
        requests = result.requests
        phases = requests["arrival_s"].map(lambda t: phase_of(t, trace, outages))
        by_phase = requests.groupby(phases)["latency_s"].mean()
        summary = result.summary
        rows.append(
            {
                "placement": name,
                "decision": ",".join(sorted(set(requests["decision"]))),
                "latency_mean_ms": summary["latency_mean_s"] * 1e3,
                "latency_p50_ms": summary["latency_p50_s"] * 1e3,
                "latency_p95_ms": summary["latency_p95_s"] * 1e3,
                **{
                    f"{p}_mean_ms": by_phase.get(p, float("nan")) * 1e3
                    for p in ("fast", "slow", "outage")
                },
                "device_mj_per_inference": summary["device_energy_per_inference_j"] * 1e3,
                "fell_back": int(requests["fell_back"].sum()),
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=EXAMPLE)
    table = run(parser.parse_args(argv).scenario)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.round(1).to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1:])
