"""The fitted host CPU as a device preset, and socsim's prediction on it.

The preset file is a normal library file (``presets: nodes: host_cpu:``), loadable with
``include:`` like the other files under ``scenarios/devices/``. Its provenance (date,
host, runtime, threads, the fit's residuals and data size) sits in ``# calibration.KEY:
VALUE`` comment lines at the top, which :func:`read_calibration_comments` reads back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from calibration.fit import FitResult
from calibration.table import Provenance
from simulator.errors import SocsimError
from simulator.graph.model import ModelGraph

NODE = "host_cpu"
UNIT = "cpu"
_COMMENT = re.compile(r"^#\s*calibration\.([a-z0-9_]+):\s*(.*)$")


def _g(value: float) -> str:
    return f"{value:.6g}"


#: Where Linux lists CPU 0's caches (one ``indexN`` directory per cache).
SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
_SIZE = re.compile(r"^(\d+)\s*([KMG]?)$")


def host_cache_sizes(root: Path = SYSFS_CACHES) -> tuple[tuple[str, int], ...]:
    """(name, bytes) of CPU 0's data and unified caches from sysfs, innermost first.

    Names are ``l1d``, ``l2``, ``l3``; instruction caches are left out. Empty when the
    directory does not exist (not Linux) or lists nothing readable.
    """
    found = {}
    for index in sorted(Path(root).glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _SIZE.match((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        scale = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[size.group(2)]
        found[level] = int(size.group(1)) * scale
    return tuple((f"l{lvl}d" if lvl == 1 else f"l{lvl}", found[lvl]) for lvl in sorted(found))


def cache_comment(sizes: tuple[tuple[str, int], ...]) -> str:
    """``l1d 32 KiB, l2 512 KiB, ...`` for a ``calibration.host_caches`` provenance line."""
    return ", ".join(f"{name} {nbytes // 1024} KiB" for name, nbytes in sizes)


def device_yaml(
    result: FitResult,
    provenance: Provenance,
    extra: Mapping[str, str],
    node: str = NODE,
    file_name: str = "host_cpu.yaml",
    predictor_file: str | None = None,
    caches: tuple[tuple[str, int, float], ...] = (),
) -> str:
    """The preset file's text (preset node ``node``).

    ``extra`` adds ``calibration.KEY: VALUE`` provenance lines (e.g. the data used);
    ``predictor_file`` names a learned kernel-predictor artifact next to the file, which
    the unit then uses for the kinds it has models of (the roofline for the rest);
    ``caches`` = (name, bytes, bandwidth B/s) levels, innermost first, become the unit's
    ``caches:`` (docs/cost-model.md) when the fit provides their bandwidths.
    """
    rates = result.rates
    keys = {
        "date": provenance.date,
        "host": provenance.host,
        "runtime": provenance.runtime,
        "threads": str(provenance.threads),
        **({"notes": provenance.notes} if provenance.notes else {}),
        "peak_gflops_measured": _g(max(rates.peak_flops.values()) / 1e9),
        "stream_gb_s_measured": _g(rates.bandwidth_bps / 1e9),
        "kernel_dispatch_us": _g(result.kernel_dispatch_s * 1e6),
        "runtime_overhead_us_per_op": _g(result.overhead_s * 1e6),
        # the profiler's cost inside each profiled kernel time, taken off before fitting
        "profiler_us_per_kernel": _g(result.profiler_s * 1e6),
        # an op's unprofiled time over its profiled kernel time less the profiler's cost
        "runtime_scale": _g(result.runtime_scale),
        "ops_fitted": str(result.op_stats.get("n", 0)),
        "op_mape_pct": _g(result.op_stats.get("mape", float("nan"))),
        "op_within_10pct": _g(result.op_stats.get("within_10", float("nan"))),
        "memory_bound_ops": str(result.op_stats.get("memory_bound", 0)),
        "models_fitted": str(result.model_stats.get("n", 0)),
        "model_mape_pct": _g(result.model_stats.get("mape", float("nan"))),
        **extra,
    }
    lines = [
        f"# scenarios/devices/{file_name}",
        "#",
        "# The machine this file was calibrated on, as one CPU unit: written by",
        "# `socsim calibrate fit` (docs/calibration.md), not by hand. Peak = the best",
        "# microbenchmark FLOP/s (fp32 GEMM/conv kernels of onnxruntime on this host),",
        "# efficiencies relative to it, bandwidth and dispatch fitted to per-op profiles by",
        "# robust least squares; dispatch includes the runtime's per-node overhead fitted to",
        "# end-to-end times of the fit models. Powers are not measured (0 W).",
        "#",
        *(f"# calibration.{key}: {value}" for key, value in keys.items()),
        "presets:",
        "  nodes:",
        f"    {node}:",
        "      role: device",
        "      units:",
        f"        {UNIT}:",
        "          kind: cpu",
        f"          cores: {rates.threads}                        # intra-op threads measured with",
        "          peak_gflops:                    # PER CORE: measured peak / threads",
    ]
    for dtype, peak in sorted(rates.peak_flops.items()):
        lines.append(f"            {dtype}: {_g(peak / rates.threads / 1e9)}")
    lines.append("          efficiency:                     # fitted, achieved / peak")
    for kind, eff in sorted(result.efficiency.items(), key=lambda kv: kv[0] != "default"):
        note = "  # geometric mean of the fitted kinds" if kind == "default" else ""
        lines.append(f"            {kind}: {_g(eff)}{note}")
    lines += [
        f"          memory_bandwidth_gb_s: {_g(result.bandwidth_bps / 1e9)}   # fitted; not DRAM"
        " bandwidth when the working sets are cache-resident (docs/calibration.md)",
        f"          dispatch_us: {_g(result.dispatch_s * 1e6)}               # fitted: kernel"
        " + runtime overhead",
    ]
    if caches:
        lines.append(
            "          caches:                         # sizes from sysfs; bandwidths fitted"
        )
        lines += [
            f"            - {{name: {name}, size_kb: {_g(nbytes / 1024)}, "
            f"bandwidth_gb_s: {_g(bps / 1e9)}}}"
            for name, nbytes, bps in caches
        ]
    if predictor_file:
        lines.append(
            f"          predictor: {{file: {predictor_file}}}   # learned kernel times"
            " (docs/calibration.md); the roofline above is the fallback"
        )
    return "\n".join([*lines, ""])


def write_device(
    path: Path,
    result: FitResult,
    provenance: Provenance,
    extra: Mapping[str, str] | None = None,
    node: str = NODE,
    predictor_file: str | None = None,
    caches: tuple[tuple[str, int, float], ...] = (),
) -> None:
    """Write the preset file (node ``node``, unit :data:`UNIT`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = device_yaml(
        result, provenance, extra or {}, node, Path(path).name, predictor_file, caches
    )
    path.write_text(text)


def node_of(path: Path) -> str:
    """The preset node a calibration file defines (its ``calibration.node``, else host_cpu)."""
    return read_calibration_comments(path).get("node", NODE)


def read_calibration_comments(path: Path) -> dict[str, str]:
    """The ``# calibration.KEY: VALUE`` lines of a preset file."""
    found = {}
    for line in Path(path).read_text().splitlines():
        match = _COMMENT.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def calibration_number(
    path: Path, comments: Mapping[str, str], key: str, default: float, low: float = 0.0
) -> float:
    """The number of a preset's ``# calibration.KEY: VALUE`` line (``default`` without
    one), finite and >= ``low``.

    Raises
    ------
    SocsimError
        When the value is not such a number (a hand-edited file), naming file and key.
    """
    text = comments.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= low):
        raise SocsimError(
            f"{path}: '# calibration.{key}: {text}' must be a finite number >= {low:g} "
            f"(written by socsim calibrate; {default:g} when the line is absent)"
        )
    return value


def load_platform(device_path: Path, node: str = NODE):
    """The :class:`~simulator.platform.Platform` of one preset node, via the scenario loader.

    Raises
    ------
    ScenarioError
        When the file or the preset is invalid (as ``socsim validate`` reports it).
    """
    from simulator.spec import parse_scenario

    device_path = Path(device_path).resolve()
    document = {
        "name": "calibration_probe",
        "include": [device_path.name],
        "nodes": {node: {"preset": node}},
        "models": {"probe": {"ops": [{"name": "probe", "kind": "custom", "flops": 1}]}},
        "workload": [
            {
                "app": "probe",
                "model": "probe",
                "source": node,
                "count": 1,
                "arrival": {"process": "periodic", "period_ms": 1},
            }
        ],
        "placement": {"policy": "single", "unit": UNIT},
    }
    return parse_scenario(document, base_dir=device_path.parent, source="<calibration>").platform


def predict_latency_s(graph: ModelGraph, platform, node: str = NODE, unit: str = UNIT) -> float:
    """socsim's latency (s) of one request of ``graph`` with every op on ``node.unit``.

    The pure list-schedule estimate (:func:`simulator.placement.estimate.estimate`), which
    equals the engine for a lone request.
    """
    from simulator.placement.base import PlacementSpec, place
    from simulator.placement.estimate import estimate
    from simulator.placement.plan import compile_plan
    from simulator.platform import CostOracle

    oracle = CostOracle(platform)
    placement = place(PlacementSpec("single", {"unit": unit}), graph, oracle, node)
    latency = estimate(compile_plan(graph, placement, oracle), oracle).latency_s
    if not latency > 0:
        raise SocsimError(f"model '{graph.name}': predicted latency {latency} s is not > 0")
    return latency
