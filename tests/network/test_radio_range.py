"""Radio power models hold over their measured range and saturate at a sourced maximum;
a scenario that runs a radio beyond the range is warned, once per radio.

Every expected power is written out by hand from the preset's coefficients.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import phone_cloud_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.cli import main
from simulator.cli_warnings import PREFIX
from simulator.engine import simulate
from simulator.errors import ScenarioError, SocsimError, SocsimWarning
from simulator.network.radio import Radio, TailStage
from simulator.network.radio_range import (
    RadioRangeWarning,
    link_excesses,
    warn_excesses,
    warn_run,
    warn_scenario,
    warn_sweep,
)
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
REPO = HERE.parents[1]
PRESET_FILES = sorted((ROOT / "scenarios" / "networks").glob("*.yaml")) + sorted(
    (ROOT / "scenarios" / "devices").glob("*.yaml")
)
RADIO_PRESETS = sorted(
    (path.stem, name)
    for path in PRESET_FILES
    for name, link in (
        yaml.safe_load(path.read_text()).get("presets", {}).get("links") or {}
    ).items()
    if "radio" in link
)
#: rates from idle to 10 Gbit/s, dense around the measured ranges (bit/s)
RATES_BPS = np.concatenate([[0.0], np.geomspace(1e3, 1e10, 141)])


def scenario_doc(file: str, preset: str, up_mbps: float, down_mbps: float, **over) -> dict:
    """A phone offloading one 1 GFLOP op (1 MB in) to a cloud over a radio preset."""
    link = {"preset": preset, "ends": ["phone", "cloud"], "latency_ms": 1.0}
    link.update(bandwidth_mbps=up_mbps, reverse_bandwidth_mbps=down_mbps, **over)
    return {
        "name": "radio_range",
        "include": [f"../../scenarios/networks/{file}.yaml"],
        "nodes": phone_cloud_nodes(),
        "links": {"air": link},
        "models": {
            "m": {
                "ops": [
                    {"name": "x", "kind": "conv", "flops": 1e9, "input_elems": 250_000},
                ]
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
        "placement": {"policy": "offload", "node": "cloud"},
    }


def preset_radio(file: str, preset: str, **over) -> Radio:
    doc = scenario_doc(file, preset, 1.0, 1.0, **over)
    return parse_scenario(doc, base_dir=HERE).platform.network.links["air"].radio


# -- the sourced maximum -----------------------------------------------------------------


def test_every_shipped_radio_preset_is_found():
    assert [name for _, name in RADIO_PRESETS] == ["3g", "5g", "lte", "wifi"]


@pytest.mark.parametrize(("file", "preset"), RADIO_PRESETS)
def test_no_shipped_radio_draws_more_than_its_sourced_maximum_at_any_rate(file, preset):
    radio = preset_radio(file, preset)
    assert radio.max_w is not None and radio.measured_up_bps and radio.measured_down_bps
    for up in RATES_BPS:
        powers = [radio.connected_power_w(up, down) for down in (0.0, up, 1e10)]
        assert max(powers) <= radio.max_w
    # and the maximum is reached: beyond the range the fit saturates, it does not stop
    assert radio.connected_power_w(1e10, 0.0) == radio.max_w


# hand-computed from each preset's (alpha_up, alpha_down, base) in mW/Mbit/s and mW
INSIDE = [
    ("lte", 5.85e6, 0.0, 1.28804 + 0.43839 * 5.85),  # 3.8526215 W
    ("lte", 0.0, 13e6, 1.28804 + 0.05197 * 13),  # 1.96365 W
    ("wifi", 18.88e6, 0.0, 0.13286 + 0.28317 * 18.88),  # 5.4791096 W
    ("wifi", 0.0, 18.88e6, 0.13286 + 0.13701 * 18.88),  # 2.7196088 W
    ("3g", 1.1e6, 0.0, 0.81788 + 0.86898 * 1.1),  # 1.773758 W
    ("5g", 40e6, 0.0, 2.57608 + 0.0641145 * 40),  # 5.14066 W
]


@pytest.mark.parametrize(("preset", "up", "down", "watts"), INSIDE)
def test_powers_inside_the_measured_range_are_the_published_fit(preset, up, down, watts):
    radio = preset_radio(preset, preset)
    assert radio.connected_power_w(up, down) == pytest.approx(watts, rel=EXACT)
    assert radio.beyond_measured(up, down) == {}


def test_beyond_the_range_the_fit_saturates_at_the_sourced_maximum():
    wifi = preset_radio("wifi", "wifi")
    # issue 18: the bare fit drew 56.8 W at 200 Mbit/s and 283 W at 1 Gbit/s
    assert wifi.connected_power_w(200e6, 0.0) == 5.79626
    assert wifi.connected_power_w(1e9, 0.0) == 5.79626
    lte = preset_radio("lte", "lte")
    # 7 Mbit/s is beyond the measured 6 but below where the fit meets 4.674 W (7.72 Mbit/s)
    assert lte.connected_power_w(7e6, 0.0) == pytest.approx(1.28804 + 0.43839 * 7, rel=EXACT)
    assert lte.connected_power_w(22.2e6, 0.0) == 4.674  # S20 Ultra, whole phone [V-derived]


@settings(max_examples=60, deadline=None)
@given(
    base=st.floats(0, 3),
    alpha_up=st.floats(0, 1e-6),
    alpha_down=st.floats(0, 1e-6),
    top_up=st.floats(1e5, 1e9),
    top_down=st.floats(1e5, 1e9),
    headroom=st.floats(0, 5),
    rates=st.lists(st.floats(0, 1e10), min_size=2, max_size=2),
    step=st.floats(0, 1e9),
)
def test_power_is_monotone_in_rate_and_bounded(
    base, alpha_up, alpha_down, top_up, top_down, headroom, rates, step
):
    top_w = base + max(alpha_up * top_up, alpha_down * top_down)
    radio = Radio(
        "rrc",
        base_w=base,
        alpha_up_w_per_bps=alpha_up,
        alpha_down_w_per_bps=alpha_down,
        tail=(TailStage("tail", 1.0, base),),
        max_w=top_w + headroom,
        measured_up_bps=top_up,
        measured_down_bps=top_down,
    )
    up, down = rates
    power = radio.connected_power_w(up, down)
    assert base <= power <= radio.max_w
    assert radio.connected_power_w(up + step, down) >= power
    assert radio.connected_power_w(up, down + step) >= power


def test_a_maximum_below_the_fit_inside_its_range_is_refused():
    with pytest.raises(SocsimError, match="max_w = 3 W is below the power at the top of the"):
        preset_radio("lte", "lte", radio={"max_w": 3.0})


# -- the documented override: radio.tx_w -------------------------------------------------


def test_the_documented_tx_w_override_is_a_flat_transmit_power_keeping_the_tail():
    wifi = preset_radio("wifi", "wifi", radio={"tx_w": 1.5})
    assert wifi.connected_power_w(18.88e6, 0.0) == 1.5
    assert wifi.connected_power_w(1e9, 0.0) == 1.5
    assert wifi.connected_power_w(0.0, 18.88e6) == pytest.approx(2.7196088, rel=EXACT)
    assert wifi.tail == (TailStage("tail", 0.25, 0.13286),)
    assert wifi.beyond_measured(1e9, 0.0) == {}  # the handset's own figure: no fit to leave


def test_a_flat_tx_w_above_the_maximum_says_to_raise_it():
    with pytest.raises(SocsimError, match=r"max_w = 5.796.* is below tx_w"):
        preset_radio("wifi", "wifi", radio={"tx_w": 7.0})


def test_a_misspelt_tx_w_suggests_it():
    with pytest.raises(ScenarioError, match="did you mean 'tx_w'"):
        preset_radio("wifi", "wifi", radio={"tx_watt": 1.5})


# -- the warning -------------------------------------------------------------------------


def load(up_mbps: float, down_mbps: float, preset: str = "wifi", **over):
    return parse_scenario(scenario_doc(preset, preset, up_mbps, down_mbps, **over), base_dir=HERE)


def test_a_link_beyond_the_range_warns_once_per_radio_naming_everything():
    scenario = load(200, 300)
    with pytest.warns(RadioRangeWarning) as caught:
        assert warn_scenario(scenario, "s.yaml") == 1
    assert len(caught) == 1
    text = str(caught[0].message)
    for part in (
        "s.yaml",
        "link 'air'",
        "node 'phone'",
        "uplink 200 Mbit/s",
        "downlink 300 Mbit/s",
        "measured up to 20",
        "saturates at max_w = 5.796 W",
    ):
        assert part in text
    assert issubclass(RadioRangeWarning, SocsimWarning)


def test_inside_the_range_nothing_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_scenario(load(18.88, 18.88)) == 0
        assert warn_scenario(load(200, 200, radio={"tx_w": 1.5, "rx_w": 1.0})) == 0


def test_a_trace_is_checked_at_its_peak():
    scenario = load(10, 10, bandwidth_trace_mbps=[[0, 10], [1, 25], [2, 10]])
    found = link_excesses(scenario.platform.network.links, {"phone": "device"})
    assert [(e.direction, e.rate_bps) for e in found] == [("uplink", 25e6)]


def test_run_warns_from_the_transfers_actually_carried():
    # the uplink can carry 200 Mbit/s; the lone 1 MB upload does; the downlink carries nothing
    scenario = load(200, 200)
    result = simulate(scenario)
    with pytest.warns(RadioRangeWarning) as caught:
        assert warn_run(scenario, result) == 1
    text = str(caught[0].message)
    assert "uplink 200 Mbit/s" in text and "downlink" not in text
    # the radio's energy while sending is the saturated power over 8e6 bits at 200 Mbit/s
    connected = result.radio_states.query("state == 'connected'")["energy_j"].sum()
    assert connected == pytest.approx(5.79626 * 8e6 / 200e6, rel=EXACT)


def test_run_without_transfer_rows_uses_the_links_table():
    scenario = load(200, 200)
    result = simulate(scenario, trace="summary")
    assert len(result.transfers) == 0
    with pytest.warns(RadioRangeWarning, match="uplink 200 Mbit/s"):
        assert warn_run(scenario, result) == 1


def test_a_run_that_keeps_its_radio_idle_does_not_warn():
    doc = scenario_doc("wifi", "wifi", 200, 200)
    doc["placement"] = {"policy": "single", "unit": "cpu"}
    scenario = parse_scenario(doc, base_dir=HERE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_run(scenario, simulate(scenario)) == 0
    assert link_excesses(scenario.platform.network.links, {"phone": "device"})  # validate would


def test_warn_excesses_groups_by_radio():
    scenario = load(200, 200)
    found = link_excesses(scenario.platform.network.links, {"phone": "device"})
    assert len(found) == 2
    with pytest.warns(RadioRangeWarning) as caught:
        assert warn_excesses(found + copy.copy(found)) == 1
    assert len(caught) == 1


def wifi_file(folder: Path, mbps: float) -> Path:
    """A scenario file over the wifi preset at ``mbps`` both ways."""
    doc = scenario_doc("wifi", "wifi", mbps, mbps)
    doc["include"] = [str(ROOT / "scenarios" / "networks" / "wifi.yaml")]
    path = folder / f"wifi_{mbps:g}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_cli_prints_the_warning_once_to_stderr_cleanly(tmp_path, capsys):
    path = wifi_file(tmp_path, 200)
    assert main(["validate", str(path)]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX + str(path))
    assert "Warning" not in captured.err and "warnings.warn" not in captured.err
    assert captured.out.startswith("ok ")
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith(PREFIX)]
    assert len(warned) == 1 and "uplink 200 Mbit/s" in warned[0]


def test_the_cli_is_silent_inside_the_range(tmp_path, capsys):
    assert main(["validate", str(wifi_file(tmp_path, 18.88))]) == 0
    assert capsys.readouterr().err == ""


# -- the shipped Wi-Fi offload sweep (docs/presets.md, "Offloading MobileNetV2 over Wi-Fi") --

WIFI_SWEEP = "scenarios/sweeps/wifi_offload_mobilenet.yaml"


def test_the_wifi_offload_crossovers_are_where_the_docs_say():
    from simulator.sweep import prepare_sweep, run_task

    prepared = prepare_sweep(WIFI_SWEEP)
    rows = {}
    for task in prepared.tasks:
        rate = task.values["links.wlan.bandwidth_mbps"]
        where = task.values["placement"].get("unit", "edge")
        if where != "edge" and rate != 5:
            continue  # the phone's figures do not depend on the link
        if rate in (5, 600, 800, 1000, 1500, 2000):
            row = run_task(task)
            assert row["status"] == "ok", row["error"]
            rows[(where, rate)] = (row["latency_mean_s"], row["device_energy_per_inference_j"])
    cpu_s, cpu_j = rows[("cpu_big", 5)]
    gpu_s, gpu_j = rows[("gpu", 5)]
    assert (round(cpu_s * 1e3, 2), round(cpu_j * 1e3, 1)) == (19.25, 67.1)
    assert (round(gpu_s * 1e3, 2), round(gpu_j * 1e3, 1)) == (16.43, 48.2)
    edge = {rate: rows[("edge", rate)] for rate in (600, 800, 1000, 1500, 2000)}
    assert edge[600][0] > cpu_s > edge[800][0]  # latency crossover with the CPU
    assert edge[1000][0] > gpu_s > edge[1500][0]  # and with the GPU
    assert edge[1500][1] > cpu_j > edge[2000][1]  # phone-energy crossover with the CPU
    assert edge[2000][1] > gpu_j  # never below the GPU up to 2 Gbit/s
    assert round(edge[2000][1] * 1e3, 1) == 65.6


def test_a_rate_carried_at_exactly_the_measured_top_is_inside_the_range():
    # a run's carried rate is bytes * 8 / busy seconds: at the top it may round a few
    # ulps above it (alexnet_phone_cloud's 13 Mbit/s LTE downlink did), which is no excess
    radio = load(18.88, 18.88).platform.network.links["air"].radio
    top = radio.measured_up_bps
    assert radio.beyond_measured(np.nextafter(top, np.inf), 0.0) == {}
    assert radio.beyond_measured(top * 1.001, 0.0) == {"uplink": top}


def test_the_shipped_lte_example_runs_without_a_range_warning():
    scenario = load_scenario(REPO / "scenarios" / "examples" / "alexnet_phone_cloud.yaml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_run(scenario, simulate(scenario, trace="summary")) == 0


def test_a_sweep_warns_once_per_radio_naming_the_values_beyond_the_range():
    # the Wi-Fi fit was measured up to 20 Mbit/s each way (measured_up/down_mbps)
    checked = [(f"links.air.bandwidth_mbps={up}", load(up, 18)) for up in (10, 18.88, 300, 50)]
    with pytest.warns(RadioRangeWarning) as caught:
        assert warn_sweep(checked, "s.yaml") == 1
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("s.yaml: sweep: radio of link 'air' at node 'phone' (rrc)")
    assert (
        "uplink up to 300 Mbit/s at 2 of 4 swept values "
        "(links.air.bandwidth_mbps=300, links.air.bandwidth_mbps=50)"
    ) in text
    assert "downlink" not in text and "max_w = 5.796 W" in text


def test_a_sweep_says_when_the_file_itself_is_beyond_the_range():
    checked = [(f"links.air.bandwidth_mbps={up}", load(up, 100)) for up in (5, 10)]
    with pytest.warns(RadioRangeWarning, match="downlink up to 100 Mbit/s at every swept value"):
        assert warn_sweep(checked) == 1


def test_a_sweep_inside_the_range_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_sweep([("a=1", load(5, 5)), ("a=2", load(18, 18))]) == 0
