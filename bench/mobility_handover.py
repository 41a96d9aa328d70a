"""The walking phone of ``scenarios/examples/mobility_handover.yaml``: adaptive against both
static choices, and the in-flight policies at the handover.

Runs the example as shipped (``dispatch: adaptive``, ``in_flight: drop``), with
``in_flight: resend``, and once per candidate pinned as a static placement; prints one row
each: latency mean / p95, mean latency per stretch of the walk (near ap1, the cell edge
around the handover, near ap2), device energy per inference, frames on the phone and on
the edge, frames a handover touched. With ``--figure FILE`` it also draws the link's
throughput over the walk and each frame's latency by where it ran. The figures in
``docs/mobility.md`` come from this script::

    python bench/mobility_handover.py [--figure docs/img/mobility_handover.png]
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

EXAMPLE = Path(__file__).resolve().parents[1] / "scenarios/examples/mobility_handover.yaml"
#: stretches of the walk by arrival time (s): near ap1, the cell edge, near ap2
STRETCHES = (("near_ap1", 0.0, 60.0), ("cell_edge", 60.0, 110.0), ("near_ap2", 110.0, 1e9))


def variants(document: dict) -> dict[str, dict]:
    """The shipped document, its resend variant, one static per candidate."""
    out = {"adaptive (drop)": document}
    resend = copy.deepcopy(document)
    resend["links"]["wifi"]["mobility"]["handover"]["in_flight"] = "resend"
    out["adaptive (resend)"] = resend
    for k, spec in enumerate(document["workload"][0]["replicas"]):
        for policy in ("drop", "resend"):
            static = copy.deepcopy(document)
            static["links"]["wifi"]["mobility"]["handover"]["in_flight"] = policy
            entry = static["workload"][0]
            for key in ("replicas", "dispatch", "adaptive"):
                entry.pop(key, None)
            entry["placement"] = spec
            out[f"static {k} ({policy})"] = static
    return out


def run(path: Path) -> tuple[pd.DataFrame, dict]:
    document = yaml.safe_load(path.read_text())
    rows, results = [], {}
    for name, doc in variants(document).items():
        result = simulate(parse_scenario(doc, base_dir=path.parent))
        results[name] = result
        requests = result.requests
        summary = result.summary
        by_stretch = {
            f"{label}_ms": requests[requests["arrival_s"].between(lo, hi, inclusive="left")][
                "latency_s"
            ].mean()
            * 1e3
            for label, lo, hi in STRETCHES
        }
        rows.append(
            {
                "run": name,
                "latency_mean_ms": summary["latency_mean_s"] * 1e3,
                "latency_p95_ms": summary["latency_p95_s"] * 1e3,
                **by_stretch,
                "device_mj_per_inference": summary["device_energy_per_inference_j"] * 1e3,
                "on_phone": int((requests["decision"] == "device").sum()),
                "on_edge": int((requests["decision"] == "edge").sum()),
                "dropped": int((requests["status"] == "dropped").sum()),
                "handover_touched": int((requests["handover"] != "").sum()),
            }
        )
    return pd.DataFrame(rows), results


def figure(results: dict, path: Path, out: Path) -> None:
    """Throughput over the walk (top) and each frame's latency by where it ran (bottom)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from simulator.spec import load_scenario

    link = load_scenario(path).platform.network.links["wifi"]
    steps = link.capacity_steps("phone")
    end_s = results["adaptive (drop)"].requests["arrival_s"].max() + 1
    times = [t for t, _ in steps] + [end_s]
    rates = [b / 1e6 for _, b in steps] + [steps[-1][1] / 1e6]
    fig = Figure(figsize=(8, 5.5))
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.step(times, rates, where="post", color="tab:blue")
    top.set_ylabel("link throughput (Mbit/s)")
    for handover in link.coverage.handovers:
        for ax in (top, bottom):
            ax.axvline(handover.time_s, color="grey", linestyle="--", linewidth=1)
        top.annotate(
            f"handover {handover.from_ap}→{handover.to_ap}",
            (handover.time_s, max(rates) * 0.9),
            xytext=(5, 0),
            textcoords="offset points",
        )
    requests = results["adaptive (drop)"].requests
    for decision, colour in (("edge", "tab:green"), ("device", "tab:red")):
        mine = requests[requests["decision"] == decision]
        label = "adaptive: edge" if decision == "edge" else "adaptive: phone"
        bottom.scatter(mine["arrival_s"], mine["latency_s"] * 1e3, s=8, c=colour, label=label)
    for name, style, label in (
        ("static 0 (drop)", ":", "always the phone"),
        ("static 1 (drop)", "-.", "always the edge"),
    ):
        static = results[name].requests
        bottom.plot(static["arrival_s"], static["latency_s"] * 1e3, style, lw=1, label=label)
    bottom.set_ylim(0, 1200)
    bottom.set_xlabel("time (s); the phone walks 1 m/s from ap1 (x = 0) to ap2 (x = 170 m)")
    bottom.set_ylabel("frame latency (ms)")
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=EXAMPLE)
    parser.add_argument("--figure", type=Path, default=None)
    args = parser.parse_args(argv)
    table, results = run(args.scenario)
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(table.round(1).to_string(index=False))
    if args.figure is not None:
        figure(results, args.scenario, args.figure)
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main(sys.argv[1:])
