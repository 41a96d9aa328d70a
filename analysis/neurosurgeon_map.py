"""The Neurosurgeon-style decision map of AlexNet over uplink bandwidth × latency.

Runs ``scenarios/examples/neurosurgeon_alexnet.yaml`` over a grid of link bandwidths
(uplink = downlink, as in docs/partitioning.md) and one-way latencies, writes the sweep
table in the sweep contract's columns (see :mod:`analysis.sources`) and draws the
figures of docs/plots.md::

    python -m analysis.neurosurgeon_map -o runs/neurosurgeon_map --img docs/img

It is a plain loop over :func:`simulator.simulate`, standing in for ``socsim sweep``
(which writes the same table) so the plots and their docs do not depend on it.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.errors import SocsimError
from simulator.output import write_csv, write_text
from simulator.output.cells import cell_columns

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios/examples/neurosurgeon_alexnet.yaml"
BANDWIDTH = "links.wlan.bandwidth_mbps"
REVERSE = "links.wlan.reverse_bandwidth_mbps"
LATENCY = "links.wlan.latency_ms"
BANDWIDTHS_MBPS = (10, 20, 50, 80, 100, 120, 150, 200, 500, 1000, 2000, 5000, 10000)
LATENCIES_MS = (0.25, 0.5, 1, 2, 5, 10, 35)
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(document: dict, path: str, value: Any) -> None:
    """Set ``value`` at a scenario path such as ``workload[0].arrival.rate_hz``.

    Raises
    ------
    SocsimError
        When a step of the path is not in the document.
    """
    steps = [int(i) if i else key for key, i in _STEP.findall(path)]
    node: Any = document
    for depth, step in enumerate(steps[:-1]):
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            where = ".".join(map(str, steps[: depth + 1]))
            raise SocsimError(f"scenario path '{path}': nothing at '{where}'") from None
    node[steps[-1]] = value


def run_grid(
    scenario: str | Path | Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    tied: Mapping[str, str] | None = None,
    replicates: int = 1,
) -> pd.DataFrame:
    """Run every combination of ``grid`` (× replicates); one row per run, sweep columns.

    Parameters
    ----------
    scenario : str, Path or mapping
        The base scenario file, or an already parsed document (includes relative to
        the working directory).
    grid : mapping of path to values
        The swept scenario paths and their values (the cartesian product is run).
    tied : mapping of path to path, optional
        Paths set to the value of a grid path at every point (e.g. the reverse
        bandwidth following the forward one); they are columns too.
    replicates : int
        Runs per point (``simulate(..., replicate=r)``).

    Returns
    -------
    DataFrame
        ``point``, the parameters, ``replicate, seed, status, error, decision`` and the
        summary keys. A point whose scenario or run fails keeps its row with
        ``status = "error"`` and the message.
    """
    from simulator import parse_scenario, simulate
    from simulator.spec.yamlio import load_yaml_file

    if isinstance(scenario, Mapping):
        base, source, base_dir = dict(scenario), "<scenario>", Path(".")
    else:
        source, base_dir = str(scenario), Path(scenario).parent
        base = load_yaml_file(Path(scenario))
    tied = dict(tied or {})
    rows = []
    for point, values in enumerate(product(*grid.values())):
        setting = dict(zip(grid, values, strict=True))
        setting.update({path: setting[source] for path, source in tied.items()})
        document = copy.deepcopy(base)
        for path, value in setting.items():
            set_path(document, path, value)
        for replicate in range(replicates):
            row: dict[str, Any] = {"point": point, **setting, "replicate": replicate}
            try:
                summary = simulate(
                    parse_scenario(document, base_dir=base_dir, source=source),
                    replicate=replicate,
                ).summary
            except SocsimError as exc:
                row.update(seed=base.get("seed"), status="error", error=str(exc), decision=None)
            else:
                row.update(seed=summary["seed"], status="ok", error=None)
                row["decision"] = summary["decision"]
                row.update({k: v for k, v in summary.items() if k not in row})
            rows.append(row)
    return cell_columns(pd.DataFrame(rows))  # mapping values as the sweep writes them


def write_sweep(table: pd.DataFrame, out_dir: str | Path, parameters: Sequence[str]) -> Path:
    """Write ``sweep.csv`` and ``sweep.json`` (the contract's two files) to ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(table, out / "sweep.csv")
    meta = {"parameters": list(parameters), "points": int(table["point"].nunique())}
    write_text(out / "sweep.json", json.dumps(meta, indent=2) + "\n")
    return out


def design_grid() -> pd.DataFrame:
    """Design choices at one link (160 Mbit/s, 1 ms): device unit × objective × dtype."""
    grid = {
        "placement.device": ("cpu_big", "cpu_little", "gpu", "npu"),
        "placement.objective": ("latency", "device_energy"),
        "models.alexnet.dtype": ("fp32", "fp16"),
        BANDWIDTH: (160,),
    }
    return run_grid(SCENARIO, grid, tied={REVERSE: BANDWIDTH})


def main(argv: Sequence[str] | None = None) -> int:
    """Build the grids, write the sweep folders and (with ``--img``) the doc pictures."""
    from analysis.run_plots import energy_breakdown, gantt, utilisation
    from analysis.style import save_figure
    from analysis.sweep_plots import decision_map, pareto_plot, sweep_curves
    from simulator import load_scenario, simulate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="runs/neurosurgeon_map")
    parser.add_argument("--img", help="also write the figures of docs/plots.md here")
    args = parser.parse_args(argv)
    out = Path(args.output)
    table = run_grid(
        SCENARIO, {BANDWIDTH: BANDWIDTHS_MBPS, LATENCY: LATENCIES_MS}, {REVERSE: BANDWIDTH}
    )
    write_sweep(table, out / "map", [BANDWIDTH, LATENCY, REVERSE])
    design = design_grid()
    write_sweep(
        design, out / "design", list(design.columns[1 : design.columns.get_loc("replicate")])
    )
    run = simulate(load_scenario(SCENARIO))
    run.write(out / "run")
    print(f"wrote {len(table)} + {len(design)} sweep rows and one run to {out}/")
    if not args.img:
        return 0
    title = "AlexNet, split_point by latency: winning cut per link bandwidth × one-way latency"
    figures = {
        "decision_map.png": decision_map(table, BANDWIDTH, LATENCY, title=title),
        "curves.png": sweep_curves(table, BANDWIDTH, group=LATENCY),
        "pareto.png": pareto_plot(
            design,
            colour="placement.device",
            title="AlexNet at 160 Mbit/s, 1 ms: device unit × objective × dtype (16 points)",
        ),
        "gantt.png": gantt(run.ops, run.transfers, requests=3),
        "energy.png": energy_breakdown(run.energy),
        "utilisation.png": utilisation(run.units),
    }
    for name, figure in figures.items():
        print(f"wrote {save_figure(figure, Path(args.img) / name, dpi=80)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
