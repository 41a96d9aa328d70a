"""Reading a run folder back into DataFrames."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from simulator.results.fleets import FLEET_COLUMNS, MEDIA_COLUMNS
from simulator.results.run_result import TABLES

RESULT_TABLES = (*TABLES, "summary")
#: tables added after runs were first written, and their columns (empty when absent)
_LATER = {"fleets": FLEET_COLUMNS, "media": MEDIA_COLUMNS}


def load_run(run_dir: str | Path) -> dict[str, pd.DataFrame]:
    """Load the tables ``socsim run -o RUN_DIR`` wrote.

    Parquet is preferred when present (exact dtypes), CSV otherwise.

    Parameters
    ----------
    run_dir : str or Path

    Returns
    -------
    dict of str to DataFrame
        One entry per table of :data:`RESULT_TABLES`.

    Raises
    ------
    FileNotFoundError
        When ``run_dir`` lacks a table, naming the missing file.
    """
    folder = Path(run_dir)
    tables = {}
    for name in RESULT_TABLES:
        parquet, csv = folder / f"{name}.parquet", folder / f"{name}.csv"
        if parquet.exists():
            tables[name] = pd.read_parquet(parquet)
        elif csv.exists():
            tables[name] = pd.read_csv(csv)
        elif name in _LATER:  # a run folder written before the table existed
            tables[name] = pd.DataFrame(columns=_LATER[name])
        else:
            raise FileNotFoundError(
                f"{folder} has no {name}.csv or {name}.parquet: is it a run folder?"
            )
    summary = folder / "summary.json"
    if summary.exists():
        tables["summary"] = pd.DataFrame([json.loads(summary.read_text())])
    return tables
