"""Fixtures of the plot tests: one run folder and one sweep folder (see plot_data)."""

from __future__ import annotations

import pytest
from conftest import phone_cloud_document
from plot_data import BANDWIDTH, BANDWIDTHS, LATENCIES, LATENCY, split_document

from analysis.neurosurgeon_map import run_grid, write_sweep
from simulator.engine import simulate
from simulator.spec import parse_scenario


@pytest.fixture(scope="session")
def sweep_table():
    grid = {BANDWIDTH: BANDWIDTHS, LATENCY: LATENCIES}
    return run_grid(split_document(), grid, replicates=2)


@pytest.fixture(scope="session")
def sweep_dir(sweep_table, tmp_path_factory):
    return write_sweep(sweep_table, tmp_path_factory.mktemp("sweep"), [BANDWIDTH, LATENCY])


@pytest.fixture(scope="session")
def run_result():
    document = phone_cloud_document()
    document["workload"][0]["count"] = 3
    return simulate(parse_scenario(document))


@pytest.fixture(scope="session")
def run_dir(run_result, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    run_result.write(out, parquet=False)
    return out
