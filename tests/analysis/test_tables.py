"""analysis.load_run reads back exactly what a run wrote."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import RESULT_TABLES, energy_breakdown, load_run
from simulator.engine import simulate
from simulator.spec import parse_scenario


@pytest.mark.parametrize("parquet", [True, False])
def test_round_trip(small_soc, tmp_path, parquet):
    result = simulate(parse_scenario(small_soc))
    result.write(tmp_path, parquet=parquet)
    tables = load_run(tmp_path)
    assert set(tables) == set(RESULT_TABLES)
    pd.testing.assert_frame_equal(tables["ops"], result.ops, check_dtype=parquet)
    assert tables["summary"]["latency_p50_s"].iloc[0] == result.summary["latency_p50_s"]
    # the breakdown needs nothing but the tables written to disk
    again = energy_breakdown(tables["energy"], tables["radio_states"])
    pd.testing.assert_frame_equal(again, result.energy_breakdown, check_dtype=parquet)


def test_missing_table_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"requests\.csv"):
        load_run(tmp_path)
