"""RunResult: the tables one run produces, its summary, and how it is written to disk.

Column names and units are part of the public contract (``docs/results.md``):
``analysis/`` and sweeps read nothing else.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from simulator.results.fleets import FLEET_COLUMNS, MEDIA_COLUMNS, decision_text

TABLES = (
    "requests",
    "ops",
    "transfers",
    "units",
    "energy",
    "apps",
    "placement",
    "radio_states",
    "power",
    "energy_breakdown",
    "dvfs_levels",
    "temperature",
    "thermal",
    "batteries",
    "links",
    "failures",
    "memory",
    "fleets",
    "media",
)
BATTERY_COLUMNS = ["node", "capacity_j", "used_j", "remaining_j", "empty_at_s"]
THERMAL_COLUMNS = [
    "node",
    "throttled_s",
    "first_throttle_s",
    "max_temperature_c",
    "final_temperature_c",
]


@dataclass(repr=False)
class RunResult:
    """Everything one replicate of a scenario produced.

    Attributes
    ----------
    requests : DataFrame
        One row per request: ``request_id, app, model, source, arrival_s, start_s,
        finish_s, latency_s, deadline_s, deadline_met, status, energy_j,
        device_energy_j, seed, replicate`` (and ``exit, exit_accuracy_top1`` when a model
        of the run has early exits).
    ops : DataFrame
        One row per executed op: ``request_id, app, op, kind, unit, node, ready_s,
        start_s, end_s, energy_j``.
    transfers : DataFrame
        One row per on-chip move or network hop: ``request_id, app, src_op,
        src_unit, dst_unit, kind, link, hop, src_node, dst_node, bytes, queued_s,
        start_s, end_s, arrive_s, energy_j, device_energy_j``.
    units : DataFrame
        One row per compute unit: busy time, utilisation, energy split, memory.
    energy : DataFrame
        One row per energy-drawing component (units and radios) over the window.
    apps : DataFrame
        One row per app: its placement decision and the predicted figures.
    placement : DataFrame
        One row per app and op: ``app, op, kind, unit, node, position`` (the op's
        place in the per-request execution order).
    radio_states : DataFrame
        Every constant-power interval of every device radio in the energy window:
        ``node, link, state (idle | promotion | connected | tail), start_s, end_s,
        power_w, energy_j`` — the radio's power over time.
    power : DataFrame
        Every constant-power interval of every unit and device radio in the energy
        window: ``node, component, kind, role, start_s, end_s, power_w, energy_j``;
        per component the rows tile the window and sum to its ``energy`` row.
    energy_breakdown : DataFrame
        Energy per ``role, node, component, kind, state`` (compute: ``idle``,
        ``active``; radio: ``idle``, ``promotion``, ``connected``, ``tail``) with
        ``energy_j`` and ``share`` of the total (:func:`energy_breakdown`).
    dvfs_levels : DataFrame
        The level of every DVFS unit at t = 0 and at each change: ``node, unit,
        time_s, level, frequency_hz, busy_w``.
    temperature : DataFrame
        Every thermal node's temperature at t = 0, at each power change, throttle and
        release, and at the window's end: ``node, time_s, temperature_c, power_w,
        throttled, event``.
    thermal : DataFrame
        One row per node with a thermal model: ``node, throttled_s, first_throttle_s,
        max_temperature_c, final_temperature_c``.
    batteries : DataFrame
        One row per node with a battery: ``node, capacity_j, used_j, remaining_j,
        empty_at_s`` (empty if it lasted the run).
    links : DataFrame
        One row per link direction that carried a hop: ``link, src_node, dst_node,
        hops, bytes, busy_s, queue_wait_mean_s`` (kept at every trace level).
    failures : DataFrame
        One row per unit and down interval (docs/failures.md): ``node, unit, start_s,
        end_s, down_s, ops_cut, requests_hit, retried, parked, dropped, request_ids``
        (empty without ``failures:``; kept at every trace level).
    memory : DataFrame
        Memory in use over time (docs/memory.md): at every instant it changed, one row
        per unit that changed: ``time_s, node, unit, weights_bytes, activation_bytes,
        unit_bytes, unit_capacity_bytes, node_bytes, node_pool_bytes`` (the unit's and
        its node's bytes after that instant); trace ``full`` only.
    fleets : DataFrame
        One row per fleet and workload entry: requests, latency over every member and
        the spread of the members' means, device energy (:func:`fleet_table`; empty
        without fleets).
    media : DataFrame
        One row per shared medium: bytes up and down, airtime in use
        (:func:`media_table`; empty without ``kind: shared`` links).
    trace : {"full", "summary", "none"}
        What the run kept: ``summary`` leaves ``ops``, ``transfers`` and ``power``
        empty; ``none`` also ``requests`` (``summary`` still holds every figure).
    summary : dict
        Headline figures (see :func:`summarize`).
    document : dict
        The resolved scenario document, to reproduce the run.
    """

    requests: pd.DataFrame
    ops: pd.DataFrame
    transfers: pd.DataFrame
    units: pd.DataFrame
    energy: pd.DataFrame
    apps: pd.DataFrame
    placement: pd.DataFrame
    radio_states: pd.DataFrame
    power: pd.DataFrame
    energy_breakdown: pd.DataFrame
    dvfs_levels: pd.DataFrame
    temperature: pd.DataFrame
    thermal: pd.DataFrame
    batteries: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    document: dict[str, Any] = field(default_factory=dict)
    links: pd.DataFrame = field(default_factory=pd.DataFrame)
    fleets: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FLEET_COLUMNS))
    media: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=MEDIA_COLUMNS))
    trace: str = "full"
    failures: pd.DataFrame = field(default_factory=pd.DataFrame)
    memory: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __repr__(self) -> str:
        """Three lines: scenario, requests done, latency, energy, table sizes
        (:mod:`simulator.results.display`); the tables are attributes."""
        from simulator.results.display import table_sizes, text_view

        return text_view(self.summary, table_sizes(self.tables()), self.trace)

    def _repr_html_(self) -> str:
        """The summary and the table sizes as HTML (Jupyter shows it for a result)."""
        from simulator.results.display import html_view, table_sizes

        return html_view(self.summary, table_sizes(self.tables()), self.trace)

    def summary_frame(self) -> pd.DataFrame:
        return pd.DataFrame([self.summary])

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def write(
        self,
        out_dir: str | Path,
        parquet: bool | None = None,
        extra: dict[str, pd.DataFrame] | None = None,
    ) -> list[Path]:
        """Write every table as CSV (and Parquet when pyarrow is there), the summary as
        JSON and the resolved scenario as YAML. Returns the paths written.

        The files are staged and appear together or not at all
        (:func:`~simulator.output.staged_dir`); text cells a spreadsheet would run as a
        formula are neutralised in the CSV files (not in Parquet).

        Parameters
        ----------
        out_dir : str or Path
            Created if missing.
        parquet : bool or None
            None: write Parquet when pyarrow imports.
        extra : dict of str to DataFrame, optional
            More tables written beside the run's, in the same staged folder (the Monte
            Carlo ``samples`` and ``intervals`` of ``socsim run --samples``).

        Raises
        ------
        OutputError
            When a column cannot be stored as Parquet (nothing is written).
        WriteError
            When the disk refuses a file (nothing is written).
        """
        from simulator.output import staged_dir, write_csv, write_parquet, write_text

        out = Path(out_dir)
        if parquet is None:
            try:
                import pyarrow  # noqa: F401

                parquet = True
            except ImportError:
                parquet = False
        names = []
        with staged_dir(out) as stage:
            tables = {**self.tables(), "summary": self.summary_frame(), **(extra or {})}
            for name, table in tables.items():
                names.append(write_csv(table, stage / f"{name}.csv").name)
                if parquet:
                    names.append(write_parquet(table, stage / f"{name}.parquet").name)
            summary = json.dumps(jsonable(self.summary), indent=2) + "\n"
            resolved = yaml.safe_dump(self.document, sort_keys=False, allow_unicode=True)
            names.append(write_text(stage / "scenario.resolved.yaml", resolved).name)
            names.append(write_text(stage / "summary.json", summary).name)
        return [out / name for name in names]


def jsonable(value: Any) -> Any:
    """``value`` (dicts nested) with numpy scalars as Python numbers, NaN and inf as None."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


@dataclass(frozen=True)
class RequestFigures:
    """What the summary needs of a run's requests (kept at every trace level).

    Attributes
    ----------
    issued : int
        Requests issued (completed, dropped, or in flight when the run stopped).
    latency_s : ndarray of float
        Latency (s) of every completed request, in request-id order (the order of the
        ``requests`` table).
    first_arrival_s : float
        Earliest arrival (s); NaN without requests.
    last_finish_s : float
        Latest completion (s); NaN without completed requests.
    with_deadline : int
        Completed requests whose app has a deadline.
    deadline_met : int
        Of those, how many finished within it.
    completed_in_window : int or None
        With a fixed energy window, the requests completed inside it (the per-inference
        energy figures divide by it); None: every completed request.
    """

    issued: int
    latency_s: np.ndarray
    first_arrival_s: float
    last_finish_s: float
    with_deadline: int
    deadline_met: int
    completed_in_window: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.deadline_met <= self.with_deadline <= len(self.latency_s):
            raise ValueError(
                f"deadline counts {self.deadline_met} met of {self.with_deadline} "
                f"inconsistent with {len(self.latency_s)} completed requests"
            )
        if len(self.latency_s) > self.issued:
            raise ValueError(f"{len(self.latency_s)} completed of {self.issued} issued")


def summarize(
    requests: RequestFigures,
    energy: pd.DataFrame,
    apps: pd.DataFrame,
    window: tuple[float, float],
    scenario: str,
    seed: int,
    replicate: int,
) -> dict[str, Any]:
    """Headline figures of a run.

    Latency percentiles use numpy's linear interpolation over completed requests.
    Energy figures are totals over ``window`` = (first arrival, last completion, the end
    of the last radio tail or of the last op, whichever is later), split by whose
    battery: ``device`` nodes vs ``edge``/``cloud`` nodes. Throughput is over first arrival -> last
    completion.
    ``inferences_per_j`` divides completed requests by the total energy; with a fixed
    energy window, the per-inference figures count the requests completed inside it.
    """
    latency = requests.latency_s
    n_done = len(latency)
    n_metered = n_done if requests.completed_in_window is None else requests.completed_in_window
    start_s, end_s = window
    # throughput over the requests' own span (first arrival -> last completion), which
    # the energy window can outlast (a radio tail)
    busy_span_s = float(requests.last_finish_s - requests.first_arrival_s) if n_done else 0.0
    by_role = energy.groupby("role")["energy_j"].sum() if len(energy) else pd.Series(dtype=float)
    total_j = float(energy["energy_j"].sum()) if len(energy) else 0.0
    device_j = float(by_role.get("device", 0.0))

    def pct(q: float) -> float:
        return float(np.percentile(latency, q)) if n_done else math.nan

    return {
        "scenario": scenario,
        "seed": seed,
        "replicate": replicate,
        "requests": requests.issued,
        "completed": n_done,
        "dropped": requests.issued - n_done,
        "latency_mean_s": float(latency.mean()) if n_done else math.nan,
        "latency_p50_s": pct(50),
        "latency_p95_s": pct(95),
        "latency_p99_s": pct(99),
        "latency_max_s": float(latency.max()) if n_done else math.nan,
        "window_start_s": start_s,
        "window_end_s": end_s,
        "throughput_rps": n_done / busy_span_s if busy_span_s > 0 else math.nan,
        "energy_j": total_j,
        "device_energy_j": device_j,
        "edge_energy_j": float(by_role.get("edge", 0.0)),
        "cloud_energy_j": float(by_role.get("cloud", 0.0)),
        "energy_per_inference_j": total_j / n_metered if n_metered else math.nan,
        "device_energy_per_inference_j": device_j / n_metered if n_metered else math.nan,
        "inferences_per_j": n_metered / total_j if total_j > 0 else math.nan,
        "device_inferences_per_j": n_metered / device_j if device_j > 0 else math.nan,
        "deadline_met_rate": requests.deadline_met / requests.with_deadline
        if requests.with_deadline
        else math.nan,
        "decision": decision_text(list(apps["app"]), list(apps["decision"])),
    }
