"""Print the co-execution tables of docs/cooperation.md (measured with the engine).

Usage (from the repository root)::

    python bench/cooperation_tables.py            # both tables
    python bench/cooperation_tables.py codl       # CPU+GPU co-execution only
    python bench/cooperation_tables.py modnn      # the phones x latency sweep

Variants of the two shipped scenarios (``codl_cpu_gpu_vgg16.yaml``,
``modnn_phones_vgg16.yaml``) are built as plain dicts and parsed with
:func:`simulator.spec.parse_scenario` (there is no sweep engine yet). Every latency is
the engine's (:func:`simulator.engine.simulate`) for one request on an idle platform;
the script checks that it equals the placement's list-schedule estimate, or exceeds it
when parts running at once stalled on the phone's shared DRAM (docs/shared-dram.md).
"""

from __future__ import annotations

import copy
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "scenarios" / "examples"
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

import simulator.placement.coexec  # noqa: E402, F401  (registers co_execute)
from simulator.engine import plan_apps, simulate  # noqa: E402
from simulator.placement.estimate import estimate  # noqa: E402
from simulator.platform import CostOracle  # noqa: E402
from simulator.spec import parse_scenario  # noqa: E402


def load(name: str) -> dict:
    document = yaml.safe_load((HERE / name).read_text())
    document["workload"] = document["workload"][:1]
    document["workload"][0]["count"] = 1  # one request: no queueing, engine == estimate
    return document


def measure(document: dict) -> tuple[float, dict]:
    """Engine latency (s) of one request and the placement notes."""
    scenario = parse_scenario(document, base_dir=HERE)
    plan = next(iter(plan_apps(scenario).values()))
    result = simulate(scenario)
    latency = float(result.requests["latency_s"].iloc[0])
    predicted = estimate(plan, CostOracle(scenario.platform)).latency_s
    stalled = result.ops["memory_stall_s"].any()
    # the estimate does not model shared DRAM: equal unless ops stalled on it, else above
    if (abs(latency - predicted) if not stalled else predicted - latency) > 1e-12 * latency:
        raise AssertionError(f"engine {latency} vs estimate {predicted} (DRAM stall: {stalled})")
    return latency, dict(plan.placement.notes)


# -- CoDL / μLayer: CPU + GPU of one flagship phone ---------------------------------------------
def codl_table() -> str:
    base = load("codl_cpu_gpu_vgg16.yaml")
    rows = [
        "| phone | model | cpu_big alone | gpu alone | co_execute auto | speedup vs best single | "
        "ideal (Σ throughputs) | ops split | cpu share (median, range) | always |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for preset, zoo, dtype in (
        ("flagship_phone", "vgg16", "fp32"),
        ("flagship_phone", "vgg16", "fp16"),
        ("flagship_phone", "resnet50", "fp32"),
        ("flagship_phone", "resnet50", "fp16"),
        ("midrange_phone", "vgg16", "fp32"),
        ("midrange_phone", "resnet50", "fp32"),
    ):
        document = copy.deepcopy(base)
        document["include"] = [f"../devices/{preset}.yaml"]
        document["nodes"] = {"phone": {**base["nodes"]["phone"], "preset": preset}}  # top clock
        document["models"] = {"net": {"zoo": zoo, "dtype": dtype}}
        document["workload"][0]["model"] = "net"
        alone = {}
        for unit in ("cpu_big", "gpu"):
            document["placement"] = {"policy": "single", "unit": unit}
            alone[unit] = measure(document)[0]
        document["placement"] = copy.deepcopy(base["placement"])
        together, notes = measure(document)
        document["placement"]["mode"] = "always"
        always, _ = measure(document)
        best = min(alone.values())
        ideal = best * sum(1 / t for t in alone.values())
        shares = [row["ratios"].get("phone.cpu_big", 0.0) for row in notes["split"]]
        share = (
            f"{statistics.median(shares):.3f} ({min(shares):.3f}–{max(shares):.3f})"
            if shares
            else "—"
        )
        rows.append(
            f"| {preset} | {zoo} {dtype} | "
            f"{alone['cpu_big'] * 1e3:.2f} ms | {alone['gpu'] * 1e3:.2f} ms | "
            f"{together * 1e3:.2f} ms | {best / together:.3f}× | {ideal:.3f}× | "
            f"{len(notes['split'])} of {len(notes['split']) + len(notes['kept'])} | {share} | "
            f"{best / always:.3f}× |"
        )
    return "\n".join(rows)


# -- MoDNN: 1 -> 2 -> 4 phones over Wi-Fi Direct links --------------------------------------
def codl_sync_table(syncs=(0, 20, 50, 150, 500, 1000)) -> str:
    """Speedup over the best single unit as the CPU<->GPU sync cost grows (mode auto)."""
    base = load("codl_cpu_gpu_vgg16.yaml")
    rows = [
        "| model | " + " | ".join(f"sync {s} µs" for s in syncs) + " |",
        "|---" * (len(syncs) + 1) + "|",
    ]
    for zoo in ("vgg16", "resnet50"):
        document = copy.deepcopy(base)
        document["models"] = {"net": {"zoo": zoo, "dtype": "fp32"}}
        document["workload"][0]["model"] = "net"
        alone = []
        for unit in ("cpu_big", "gpu"):
            document["placement"] = {"policy": "single", "unit": unit}
            alone.append(measure(document)[0])
        document["placement"] = copy.deepcopy(base["placement"])
        cells = []
        for sync in syncs:
            document["nodes"]["phone"]["sync_us"] = sync
            latency, notes = measure(document)
            cells.append(f"{min(alone) / latency:.3f}× ({len(notes['split'])})")
        rows.append(f"| {zoo} fp32 | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def phones(
    base: dict,
    n: int,
    unit: str,
    latency_ms: float,
    equal: bool = False,
    bandwidth_mbps: float | None = None,
) -> dict:
    """``n`` phones of the MoDNN scenario; ``equal``: fixed equal shares, always split."""
    document = copy.deepcopy(base)
    document["nodes"] = {f"phone{i}": base["nodes"][f"phone{i}"] for i in range(n)}
    document["links"] = {
        f"d2d{i}": {**base["links"][f"d2d{i}"], "latency_ms": latency_ms} for i in range(1, n)
    }
    if bandwidth_mbps is not None:
        for link in document["links"].values():
            link["bandwidth_mbps"] = link["reverse_bandwidth_mbps"] = bandwidth_mbps
    if n == 1:
        document["placement"] = {"policy": "single", "unit": f"phone0.{unit}"}
        return document
    document["placement"] = {**base["placement"], "units": [f"phone{i}.{unit}" for i in range(n)]}
    if equal:
        document["placement"].update(mode="always", ratio=[1 / n] * n)
    return document


def modnn_table(unit: str = "cpu_big", latencies=(1, 10, 30, 100)) -> str:
    base = load("modnn_phones_vgg16.yaml")
    alone, _ = measure(phones(base, 1, unit, 0))
    head = " | ".join(f"{lat} ms" for lat in latencies)
    rows = [
        f"| phones ({unit}) | {head} |",
        "|---" * (len(latencies) + 1) + "|",
        f"| 1 (alone: {alone * 1e3:.0f} ms) | " + " | ".join("1.00×" for _ in latencies) + " |",
    ]
    for n in (2, 4):
        for equal, label in ((False, "auto, balanced"), (True, "always, equal shares")):
            cells = []
            for lat in latencies:
                latency, notes = measure(phones(base, n, unit, lat, equal))
                cells.append(f"{alone / latency:.2f}× ({len(notes['split'])})")
            rows.append(f"| {n}, {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def modnn_bandwidth_table(bandwidths=(100, 320, 1000, 3000), latency_ms: float = 1) -> str:
    """What-if: 4 phones (auto) at 1 ms as the link bandwidth grows, per compute unit."""
    base = load("modnn_phones_vgg16.yaml")
    rows = [
        "| unit | " + " | ".join(f"{b} Mbit/s" for b in bandwidths) + " |",
        "|---" * (len(bandwidths) + 1) + "|",
    ]
    for unit in ("cpu_big", "cpu_little", "gpu"):
        alone, _ = measure(phones(base, 1, unit, 0))
        cells = [
            f"{alone / measure(phones(base, 4, unit, latency_ms, bandwidth_mbps=b))[0]:.2f}×"
            for b in bandwidths
        ]
        rows.append(f"| {unit} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    which = argv[1:] or ["codl", "modnn"]
    if "codl" in which:
        print("CPU+GPU co-execution (one request, engine-measured)\n")
        print(codl_table(), "\n")
        print("Speedup over the best single unit vs CPU<->GPU sync (auto); (n) = ops split\n")
        print(codl_sync_table(), "\n")
    if "modnn" in which:
        print(
            "Speedup over one phone, VGG16 fp32, conv layers split by rows over 320 Mbit/s "
            "links; (n) = conv layers split\n"
        )
        for unit in ("cpu_big", "cpu_little", "gpu"):
            print(modnn_table(unit), "\n")
        print("What-if: 4 phones, 1 ms, auto, as the link bandwidth grows\n")
        print(modnn_bandwidth_table(), "\n")


if __name__ == "__main__":
    main(sys.argv)
