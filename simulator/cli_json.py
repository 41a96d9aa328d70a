"""``--json`` of ``socsim run`` and ``socsim sweep``: one JSON object on stdout, for scripts.

Numbers are in the tables' units (seconds, joules, bytes); a figure that does not exist
(NaN, e.g. the latency of an app whose requests all dropped) is ``null``. The text the
commands print otherwise is left out, so ``socsim run X --json | jq .summary`` works.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.results.run_result import jsonable


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of ``frame`` as JSON-ready dicts."""
    return [jsonable(row) for row in frame.to_dict(orient="records")]


def app_figures(result: Any) -> list[dict[str, Any]]:
    """Per app and replica: its ``apps`` row, and when the run kept its requests table
    (``--trace full`` or ``summary``) the requests, completed, latency mean and p95 (s)."""
    rows = records(result.apps)
    requests = result.requests
    if not len(requests):
        return rows
    for row in rows:
        mine = requests[(requests["app"] == row["app"]) & (requests["replica"] == row["replica"])]
        done = mine[mine["status"] == "completed"]["latency_s"]
        row.update(
            requests=len(mine),
            completed=len(done),
            latency_mean_s=jsonable(float(done.mean())) if len(done) else None,
            latency_p95_s=jsonable(float(done.quantile(0.95))) if len(done) else None,
        )
    return rows


def run_json(result: Any, out_dir: Path, written: list[Path], extra: dict | None) -> str:
    """The ``socsim run --json`` object: ``summary``, ``apps``, ``output_dir``, ``files``
    (and ``intervals`` with ``--samples``)."""
    document: dict[str, Any] = {
        "summary": jsonable(result.summary),
        "apps": app_figures(result),
        "output_dir": str(out_dir),
        "files": len(written),
    }
    if extra is not None:
        document["intervals"] = records(extra["intervals"])
    return json.dumps(document, allow_nan=False)


def sweep_json(
    meta: dict[str, Any], points: int, table: pd.DataFrame, out_dir: Path, spec: Any
) -> str:
    """The ``socsim sweep --json`` object: the sweep's shape, its row counts, the failed
    runs (point, replicate, error) and where the table is."""
    failed = table[table["status"] != "ok"]
    document = {
        "scenario": meta["scenario"],
        "parameters": list(spec.paths),
        "design": spec.design,
        "points": points,
        "replicates": spec.replicates,
        "mc_samples": spec.mc_samples,
        "rows": len(table),
        "failed": [
            {"point": int(r.point), "replicate": int(r.replicate), "error": str(r.error)}
            for r in failed.itertuples()
        ],
        "output_dir": str(out_dir),
    }
    return json.dumps(jsonable(document), allow_nan=False)
