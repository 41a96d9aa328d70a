"""The loaded-cloud case of issue 19: where a phone app's frames go when 64 tenants load the A100.

Runs ``scenarios/examples/loaded_cloud.yaml`` as shipped (``dispatch: adaptive``), each
candidate pinned as a static placement, and ``split_point`` (phone big cores vs the
cloud) on the idle-cloud assumption and with the cloud node's ``load_factor`` set to the
slowdown the tenants measure (their mean latency over their idle estimate, rounded up).
Prints one row per variant: the camera's frames per replica, mean latency, the policy's
prediction for the placement it chose. docs/adaptive.md#a-loaded-cloud quotes it.

Run ``python bench/loaded_cloud.py``.
"""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulator.engine import plan_replicas, simulate  # noqa: E402
from simulator.placement.estimate import estimate  # noqa: E402
from simulator.platform import CostOracle  # noqa: E402
from simulator.spec import parse_scenario  # noqa: E402

EXAMPLE = ROOT / "scenarios/examples/loaded_cloud.yaml"


def _run(name: str, document: dict) -> dict:
    scenario = parse_scenario(document, base_dir=EXAMPLE.parent)
    oracle = CostOracle(scenario.platform)
    plans = plan_replicas(scenario, oracle)
    predicted_ms = [round(estimate(p, oracle).latency_s * 1e3, 1) for p in plans["camera"]]
    requests = simulate(scenario, trace="summary").requests
    camera = requests[requests["app"] == "camera"]
    tenants = requests[requests["app"] == "tenants"]
    return {
        "variant": name,
        "frames per replica": camera["replica"].value_counts().sort_index().to_dict(),
        "camera mean ms": float(round(camera["latency_s"].mean() * 1e3, 1)),
        "camera p95 ms": float(round(camera["latency_s"].quantile(0.95) * 1e3, 1)),
        "idle estimate ms": predicted_ms,
        "tenants mean ms": float(round(tenants["latency_s"].mean() * 1e3, 1)),
        "tenant idle ms": estimate(plans["tenants"][0], oracle).latency_s * 1e3,
    }


def main() -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    rows = [_run("adaptive (shipped)", document)]
    entry = document["workload"][0]
    for k, spec in enumerate(entry["replicas"]):
        static = copy.deepcopy(document)
        mine = static["workload"][0]
        for key in ("replicas", "dispatch", "adaptive"):
            mine.pop(key, None)
        mine["placement"] = spec
        rows.append(_run(f"static {k}: {spec['policy']}", static))
    slowdown = math.ceil(rows[0]["tenants mean ms"] / rows[0]["tenant idle ms"])
    for factor in (1.0, float(slowdown)):
        split = copy.deepcopy(document)
        mine = split["workload"][0]
        for key in ("replicas", "dispatch", "adaptive"):
            mine.pop(key, None)
        mine["placement"] = {"policy": "split_point", "device": "cpu_big", "node": "cloud"}
        split["nodes"]["cloud"]["load_factor"] = factor
        rows.append(_run(f"split_point, cloud load_factor {factor:g}", split))
    for row in rows:
        row.pop("tenant idle ms")
        print(row)
    print(f"tenants' slowdown (mean latency / idle estimate, rounded up): {slowdown}")


if __name__ == "__main__":
    main()
