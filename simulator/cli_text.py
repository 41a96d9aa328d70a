"""What ``socsim run`` and the inspecting commands print: the run's headline figures as
aligned lines in display units (:func:`format_summary`) and pandas tables at the
terminal's width (:func:`print_table`). Imported by ``socsim --help``, so pandas is
imported inside the function that prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

_SUMMARY_ROWS = (
    ("decision", "decision", ""),
    ("requests", "completed", ""),
    ("latency_mean_s", "latency mean", "ms"),
    ("latency_p50_s", "latency p50", "ms"),
    ("latency_p95_s", "latency p95", "ms"),
    ("latency_p99_s", "latency p99", "ms"),
    ("throughput_rps", "throughput", "req/s"),
    ("energy_per_inference_j", "energy / inference (all)", "mJ"),
    ("device_energy_per_inference_j", "energy / inference (device)", "mJ"),
    ("inferences_per_j", "inferences per joule (all)", ""),
    ("deadline_met_rate", "deadlines met", "%"),
)
_SCALE = {"ms": 1e3, "mJ": 1e3, "%": 100.0, "req/s": 1.0, "": 1.0}


def print_table(frame: pd.DataFrame) -> None:
    """Print ``frame`` without its index, up to 500 rows, 30 columns, 160 characters wide."""
    import pandas as pd

    with pd.option_context(
        "display.max_rows", 500, "display.width", 160, "display.max_columns", 30
    ):
        print(frame.to_string(index=False))


def format_summary(summary: dict) -> str:
    """The headline figures as aligned text lines, in display units."""
    lines = [
        f"scenario {summary['scenario']}  seed {summary['seed']}  replicate {summary['replicate']}"
    ]
    for key, label, unit in _SUMMARY_ROWS:
        value = summary[key]
        if key == "requests":
            text = f"{summary['completed']} of {summary['requests']}"
        elif isinstance(value, float):
            text = "n/a" if value != value else f"{value * _SCALE[unit]:.4g} {unit}".rstrip()
        else:
            text = str(value)
        lines.append(f"  {label:<30} {text}")
    window = summary["window_end_s"] - summary["window_start_s"]
    lines.append(
        f"  {'energy window':<30} {summary['window_start_s']:.4g} s -> "
        f"{summary['window_end_s']:.4g} s ({window:.4g} s): "
        f"device {summary['device_energy_j']:.4g} J, edge"
        f" {summary['edge_energy_j']:.4g} J, cloud {summary['cloud_energy_j']:.4g} J"
    )
    return "\n".join(lines)
