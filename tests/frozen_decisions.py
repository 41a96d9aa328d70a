"""Cases whose placement decisions are frozen in ``placement/data/decisions_frozen.json``.

The fixture was written by the placement code *before* split_point, the list schedulers
and min_cut were made fast (commit b4f124d), so ``placement/test_decisions_frozen.py``
proves the fast code decides exactly as the old one did: same op -> unit, same order,
same notes (the whole split_point curve, min_cut's cut value, HEFT's makespan...) and the
same estimate, with every float compared bit for bit (``float.hex``).

Cases: every shipped scenario's apps, plus seeded random layered DAGs placed on the
platforms of the shipped scenarios (one to four nodes, Wi-Fi, LTE and 3G radios
included) and random DAGs with explicit time tables and ``comm_s`` edges (the exact
arithmetic of the list schedulers). Regenerate (only on purpose, when a decision is
meant to change) with ``python tests/frozen_decisions.py --write``.

A policy added later is frozen as its code decides when it is added, without touching
the others' entries: ``python tests/frozen_decisions.py --add POLICY`` (PEFT was added so,
after its paper's worked example was reproduced: tests/placement/test_peft.py). A shipped
scenario added later is frozen likewise: ``--add-cases`` decides only the cases the
fixture lacks (examples/dynamic_vs_static.yaml was added so).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "placement" / "data" / "decisions_frozen.json"
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from simulator.errors import SocsimError  # noqa: E402
from simulator.graph.model import Edge, ModelGraph, Op  # noqa: E402
from simulator.placement import POLICIES  # noqa: E402
from simulator.placement.estimate import estimate  # noqa: E402
from simulator.placement.plan import compile_plan  # noqa: E402
from simulator.platform import CostOracle  # noqa: E402
from simulator.spec import load_scenario  # noqa: E402

#: the policies made fast by issue 17 (item 4), with option variants worth freezing
POLICY_VARIANTS: dict[str, tuple[dict, ...]] = {
    "split_point": (
        {},
        {"objective": "device_energy"},
        {"objective": "weighted", "weights": {"latency": 1.0, "total_energy": 0.05}},
        {"deadline_s": 0.02},
    ),
    "min_cut": ({}, {"objective": "total_energy"}),
    "heft": ({},),
    "cpop": ({},),
    "greedy_eft": ({},),
    "peft": ({},),  # added later, frozen by its own code (--add)
}

#: shipped scenarios whose platform also hosts random DAGs (source: first app's)
RANDOM_PLATFORMS = (
    "examples/neurosurgeon_alexnet.yaml",
    "examples/alexnet_lossy_lte.yaml",
    "examples/multi_app_edge_cloud.yaml",
    "examples/modnn_phones_vgg16.yaml",
    "examples/pipeline_npu_gpu.yaml",
    "sweeps/neurosurgeon_map.yaml",
)
RANDOM_SIZES = ((40, 1), (150, 2))  # (ops, seed)


def scenario_files() -> list[Path]:
    return sorted(
        p
        for folder in ("examples", "score", "sweeps")
        for p in (ROOT / "scenarios" / folder).glob("*.yaml")
    )


def random_dag(n_ops: int, seed: int, times: tuple[str, ...] = ()) -> ModelGraph:
    """A layered DAG: op j reads up to two of the 12 ops before it (``times``: a time table
    over those units in whole ms, and half of the edges with an explicit ``comm_s``)."""
    rng = random.Random(seed)
    ops = []
    for i in range(n_ops):
        table = {u: rng.randint(1, 30) / 1000 for u in times}
        ops.append(
            Op(
                f"op{i}",
                rng.choice(("conv", "fc", "elementwise")),
                flops=rng.uniform(1e5, 5e8),
                input_elems=rng.randint(1_000, 400_000),
                output_elems=rng.randint(100, 400_000),
                params=rng.randint(0, 2_000_000),
                time_s=table,
            )
        )
    edges = []
    for j in range(1, n_ops):
        for i in sorted({rng.randint(max(0, j - 12), j - 1) for _ in range(2)}):
            comm = rng.randint(1, 20) / 1000 if times and rng.random() < 0.5 else None
            edges.append(Edge(f"op{i}", f"op{j}", ops[i].output_bytes, comm))
    return ModelGraph(f"rand{n_ops}_{seed}", ops, edges)


def cases() -> Iterator[tuple[str, ModelGraph, CostOracle, str]]:
    """(case id, graph, oracle, source) for every frozen case, in a fixed order."""
    for path in scenario_files():
        scenario = load_scenario(path)
        oracle = CostOracle(scenario.platform)
        rel = path.relative_to(ROOT / "scenarios").as_posix()
        seen = set()
        # a fleet's members are one template: its first member stands for them all
        later = {m for members in scenario.fleets.members.values() for m in members[1:]}
        for entry in scenario.workload:
            if (entry.model, entry.source) in seen or entry.source in later:
                continue
            seen.add((entry.model, entry.source))
            graph = scenario.models[entry.model]
            yield f"{rel}:{entry.model}@{entry.source}", graph, oracle, entry.source
        if rel in RANDOM_PLATFORMS:
            source = scenario.workload[0].source
            for n_ops, seed in RANDOM_SIZES:
                yield f"{rel}:random{n_ops}s{seed}", random_dag(n_ops, seed), oracle, source
        if rel == "examples/heft_topcuoglu.yaml":
            units = tuple(u.split(".")[-1] for u in scenario.platform.unit_ids)
            for n_ops, seed in ((30, 3), (120, 4)):
                graph = random_dag(n_ops, seed, times=units)
                yield f"{rel}:timed{n_ops}s{seed}", graph, oracle, "host"


def encode(value: Any) -> Any:
    """JSON form with every float as ``#`` + its exact hex (and tuples as lists)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return "#" + value.hex()
    if isinstance(value, Fraction):
        return f"#fraction {value}"
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot freeze {type(value).__name__}: {value!r}")


def two_locations(oracle: CostOracle, source: str) -> dict:
    """Options naming the remote unit where the default cannot (not exactly two nodes):
    the first unit of the last other node, or the source node's last unit (on chip)."""
    platform = oracle.platform
    others = [name for name in platform.nodes if name != source]
    if len(others) == 1:
        return {}
    units = list(platform.units_of(others[-1] if others else source))
    return {"remote": units[-1]}


def decide(graph: ModelGraph, oracle: CostOracle, source: str, policy: str, options: dict):
    """Everything a policy decides on one case (or the error it raises), encoded."""
    function = POLICIES.get(policy).function
    if policy in ("split_point", "min_cut"):
        options = {**two_locations(oracle, source), **options}
    try:
        placement = function(graph, oracle, source, options)
    except SocsimError as exc:  # an error is a decision too
        return {"error": f"{type(exc).__name__}: {exc}"}
    predicted = estimate(compile_plan(graph, placement, oracle), oracle)
    index = {name: i for i, name in enumerate(graph.order)}
    return encode(
        {
            "units": [placement.assignment[name] for name in graph.order],
            "order": [index[name] for name in placement.order],
            "notes": dict(placement.notes),
            "latency_s": predicted.latency_s,
            "energy_j": predicted.energy_j,
            "device_energy_j": predicted.device_energy_j,
            "bytes_sent": predicted.bytes_sent,
        }
    )


def record() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for case, graph, oracle, source in cases():
        row = out.setdefault(case, {})
        for policy, variants in POLICY_VARIANTS.items():
            for k, options in enumerate(variants):
                row[f"{policy}#{k}"] = decide(graph, oracle, source, policy, options)
    return out


def add_policy(frozen: dict[str, dict[str, Any]], policy: str) -> dict[str, dict[str, Any]]:
    """``frozen`` with ``policy``'s variants decided on every case it holds; every other
    entry is kept as it is (a case the fixture lacks is an error: regenerate with --write)."""
    out = {case: dict(row) for case, row in frozen.items()}
    for case, graph, oracle, source in cases():
        if case not in out:
            raise SystemExit(f"the fixture has no case {case}: regenerate it with --write")
        for k, options in enumerate(POLICY_VARIANTS[policy]):
            out[case][f"{policy}#{k}"] = decide(graph, oracle, source, policy, options)
    return out


def add_cases(frozen: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``frozen`` with every case it lacks (a shipped scenario added later) decided by
    every policy variant; the cases it holds are kept as they are."""
    out = {case: dict(row) for case, row in frozen.items()}
    for case, graph, oracle, source in cases():
        if case in out:
            continue
        out[case] = {
            f"{policy}#{k}": decide(graph, oracle, source, policy, options)
            for policy, variants in POLICY_VARIANTS.items()
            for k, options in enumerate(variants)
        }
    return out


def write(frozen: dict[str, dict[str, Any]]) -> None:
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(frozen, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes)")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write(record())
    elif len(sys.argv) == 3 and sys.argv[1] == "--add" and sys.argv[2] in POLICY_VARIANTS:
        write(add_policy(json.loads(FIXTURE.read_text()), sys.argv[2]))
    elif sys.argv[1:] == ["--add-cases"]:
        write(add_cases(json.loads(FIXTURE.read_text())))
    else:
        sys.exit(
            "usage: python tests/frozen_decisions.py --write  (rewrites the fixture)\n"
            "       python tests/frozen_decisions.py --add POLICY  (adds one policy's entries; "
            f"POLICY: one of {', '.join(POLICY_VARIANTS)})\n"
            "       python tests/frozen_decisions.py --add-cases  (adds the cases of shipped "
            "scenarios added since, every policy)"
        )
