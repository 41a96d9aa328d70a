"""Print the tables of docs/sharing.md (measured with the engine on the shipped scenarios).

Usage (from the repository root)::

    python bench/sharing_tables.py            # all tables
    python bench/sharing_tables.py pipeline   # one of: amdahl, multi_dnn, balancing, pipeline

Each table runs one shipped scenario of ``scenarios/examples`` changed one key at a time.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "scenarios" / "examples"
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from simulator.engine import simulate  # noqa: E402
from simulator.spec import parse_scenario  # noqa: E402


def run(name: str, edit=None):
    document = yaml.safe_load((HERE / name).read_text())
    if edit is not None:
        edit(document)
    return simulate(parse_scenario(document, base_dir=HERE))


def lone(document: dict) -> None:
    document["workload"] = document["workload"][:1]
    document["workload"][0]["count"] = 1
    document["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 1000}


def amdahl_table() -> str:
    rows = [
        "| cores per op | lone request | speedup | Amdahl S(n), p = 0.95 | "
        "6 requests in flight: throughput | mean latency | memory stall per request |",
        "|---|---|---|---|---|---|---|",
    ]
    first = None
    for n in (1, 2, 3, 6):

        def cores(document, n=n):
            document["nodes"]["phone"]["units"]["cpu_big"]["cores_per_op"] = n

        alone = run("amdahl_cpu_cores.yaml", lambda d, c=cores: (c(d), lone(d)))
        latency = alone.requests["latency_s"].iloc[0]
        first = first or latency
        loaded = run("amdahl_cpu_cores.yaml", cores)
        stall = _stall_s(loaded) / len(loaded.requests)
        amdahl = 1 / (0.05 + 0.95 / n)
        rows.append(
            f"| {n} | {latency * 1e3:.2f} ms | {first / latency:.2f}× | {amdahl:.2f} | "
            f"{loaded.summary['throughput_rps']:.1f} req/s | "
            f"{loaded.summary['latency_mean_s'] * 1e3:.1f} ms | {stall * 1e3:.2f} ms |"
        )
    return "\n".join(rows)


def _stall_s(result) -> float:
    """Summed memory stall of a run's ops (0 from a version without shared DRAM)."""
    ops = result.ops
    return float(ops["memory_stall_s"].sum()) if "memory_stall_s" in ops else 0.0


def multi_dnn_table() -> str:
    rows = [
        "| scheduler | camera p50 | camera p99 | camera deadlines met | background p50 |",
        "|---|---|---|---|---|",
    ]
    for scheduler in ("fcfs", "ready_order", "priority", "edf"):
        result = run("multi_dnn_priority.yaml", lambda d, s=scheduler: d.update(scheduler=s))
        requests = result.requests
        camera = requests[requests["app"] == "camera"]
        background = requests[requests["app"] == "background"]
        rows.append(
            f"| `{scheduler}` | {camera['latency_s'].median() * 1e3:.1f} ms | "
            f"{camera['latency_s'].quantile(0.99) * 1e3:.1f} ms | "
            f"{camera['deadline_met'].mean() * 100:.0f} % | "
            f"{background['latency_s'].median() * 1e3:.1f} ms |"
        )
    return "\n".join(rows)


def balancing_table() -> str:
    rows = [
        "| dispatch | mean latency | p99 latency | "
        "requests per replica (T4, Orin GPU, DLA0, DLA1) |",
        "|---|---|---|---|",
    ]
    for dispatch in ("round_robin", "jsq", "least_loaded", "power_of_two"):

        def edit(document, dispatch=dispatch):
            document["workload"][0]["dispatch"] = dispatch

        requests = run("load_balancing.yaml", edit).requests
        latency = requests["latency_s"]
        counts = requests["replica"].value_counts().reindex(range(4), fill_value=0)
        rows.append(
            f"| `{dispatch}` | {_ms(latency.mean())} | {_ms(latency.quantile(0.99))} | "
            + ", ".join(f"{c:,}" for c in counts)
            + " |"
        )
    return "\n".join(rows)


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.3g} ms"


def pipeline_table() -> str:
    rows = [
        "| placement | lone request | throughput (4 in flight) | mean latency (4 in flight) | "
        "utilisation NPU / GPU | memory stall per request |",
        "|---|---|---|---|---|---|",
    ]
    base = yaml.safe_load((HERE / "pipeline_npu_gpu.yaml").read_text())
    for label, placement in (
        ("NPU only", {"policy": "single", "unit": "npu"}),
        ("GPU only", {"policy": "single", "unit": "gpu"}),
        ("NPU → GPU pipeline", copy.deepcopy(base["placement"])),
    ):

        def edit(document, placement=placement):
            document["placement"] = copy.deepcopy(placement)

        alone = run("pipeline_npu_gpu.yaml", lambda d, e=edit: (e(d), lone(d)))
        loaded = run("pipeline_npu_gpu.yaml", edit)
        units = loaded.units.set_index("unit")["utilisation"]
        stall = _stall_s(loaded) / len(loaded.requests)
        rows.append(
            f"| {label} | {alone.requests['latency_s'].iloc[0] * 1e3:.2f} ms | "
            f"{loaded.summary['throughput_rps']:.1f} req/s | "
            f"{loaded.summary['latency_mean_s'] * 1e3:.1f} ms | "
            f"{units['phone.npu']:.2f} / {units['phone.gpu']:.2f} | {stall * 1e3:.2f} ms |"
        )
    return "\n".join(rows)


TABLES = {
    "amdahl": amdahl_table,
    "multi_dnn": multi_dnn_table,
    "balancing": balancing_table,
    "pipeline": pipeline_table,
}


def main(argv: list[str]) -> int:
    if "--help" in argv or "-h" in argv:
        print(__doc__)
        return 0
    which = argv[1:] or list(TABLES)
    if any(w not in TABLES for w in which):
        print(__doc__)
        return 2
    for name in which:
        print(f"{name}\n\n{TABLES[name]()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
