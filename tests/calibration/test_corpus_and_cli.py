"""Corpora (deterministic, disjoint), the profile parser and the CLI steps that need no ORT."""

from __future__ import annotations

import json

import pytest

from calibration.corpus import FIT, HOLDOUT, Recipe, assert_disjoint, build_corpus, model_digest
from calibration.device import load_platform, read_calibration_comments
from calibration.ortrun import parse_profile
from simulator.cli import main
from simulator.errors import SocsimError
from simulator.exitcodes import EXIT_INVALID


def test_corpora_are_disjoint_and_deterministic(tmp_path):
    assert_disjoint(FIT, HOLDOUT)
    assert not {r.name for r in FIT} & {r.name for r in HOLDOUT}
    names = ("fit_cnn_w16_d3_r64", "fit_mlp_t64_256", "sweep_token_0")
    first = build_corpus("fit", tmp_path / "a", names)
    second = build_corpus("fit", tmp_path / "b", names)
    assert sorted(first) == sorted(names)
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes()
    small = [r for r in FIT if r.name in names]
    digests = {model_digest(r.build()) for r in small}
    assert len(digests) == len(small)  # no two models are the same file
    # a cached file is reused (same key), a stale one rebuilt
    path = first["fit_mlp_t64_256"]
    path.write_bytes(b"stale")
    assert build_corpus("fit", tmp_path / "a", names)[path.stem].read_bytes() == b"stale"
    key = tmp_path / "a" / "fit_mlp_t64_256.key.json"
    key.write_text('{"key": "old", "graph": "x"}')
    assert build_corpus("fit", tmp_path / "a", names)[path.stem].read_bytes() != b"stale"


def test_shared_models_are_refused():
    with pytest.raises(SocsimError, match="share model name"):
        assert_disjoint(FIT, (FIT[0],))
    twin = Recipe("hold_twin", FIT[0].family, FIT[0].args)
    with pytest.raises(SocsimError, match="same recipe"):
        assert_disjoint(FIT, (twin,))
    with pytest.raises(SocsimError, match="unknown family 'vgg'"):
        Recipe("x", "vgg")
    with pytest.raises(SocsimError, match="no model"):
        build_corpus("fit", __import__("pathlib").Path("/nonexistent"), ("nope",))


def test_profile_parser_drops_warmup_and_keeps_order():
    def event(node, dur, op="Conv"):
        return {
            "cat": "Node",
            "name": f"{node}_kernel_time",
            "dur": dur,
            "args": {
                "op_name": op,
                "input_type_shape": [{"float": [1, 3]}],
                "output_type_shape": [{"float": [1, 4]}],
            },
        }

    events = [{"cat": "Session", "name": "model_run", "dur": 99}]
    events += [
        event("b", 50),
        event("a", 7, "Relu"),
        event("b", 10),
        event("a", 3, "Relu"),
        event("b", 12),
        event("a", 2, "Relu"),
        {"cat": "Node", "name": "b_fence_before", "dur": 1},
    ]
    nodes = parse_profile(events, warmup=1)
    assert [n.node for n in nodes] == ["b", "a"]
    assert nodes[0].times_s == pytest.approx((10e-6, 12e-6))
    assert nodes[1].times_s == pytest.approx((3e-6, 2e-6))
    assert nodes[1].op_type == "Relu" and nodes[0].shapes == "1x3->1x4"
    with pytest.raises(SocsimError, match="no '\\*_kernel_time'"):
        parse_profile([{"cat": "Session", "name": "x", "dur": 1}], source="p.json")
    with pytest.raises(SocsimError, match="JSON list"):
        parse_profile({"traceEvents": []})


GENERIC = "model,node,kind,flops,bytes,time_ms\n" + "".join(
    f"m{i % 3},n{i},{kind},{flops},{nbytes},{ms}\n"
    for i, (kind, flops, nbytes, ms) in enumerate(
        [
            ("conv", 2e8, 1e6, 1.0 / 0.5 * 2e8 / 1e11 * 1e3 + 0.005),
            ("conv", 2e6, 1e5, 2e6 / 5e10 * 1e3 + 0.005),
            ("fc", 1e6, 4e6, 4e6 / 2e10 * 1e3 + 0.005),
            ("fc", 1e8, 1e6, 1e8 / 2e10 * 1e3 + 0.005),
            ("elementwise", 0, 8e6, 8e6 / 2e10 * 1e3 + 0.005),
            ("elementwise", 0, 8e4, 8e4 / 2e10 * 1e3 + 0.005),
        ]
        * 2
    )
)


def test_cli_import_then_fit_with_given_rates(tmp_path, capsys):
    """conv at eff 0.5, fc at 0.2 of 100 GFLOP/s, 20 GB/s, 5 µs: the fit finds them exactly."""
    (tmp_path / "phone.csv").write_text(GENERIC)
    table, device = tmp_path / "t.csv", tmp_path / "dev.yaml"
    assert (
        main(
            [
                "calibrate",
                "import-csv",
                str(tmp_path / "phone.csv"),
                "-o",
                str(table),
                "--host",
                "Pixel 8 (Tensor G3)",
                "--runtime",
                "tflite 2.16",
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "t.csv.provenance.json").read_text())["host"].startswith("Pixel")
    assert (
        main(
            [
                "calibrate",
                "fit",
                str(table),
                "-o",
                str(device),
                "--peak-gflops",
                "fp32=100",
                "--bandwidth-gb-s",
                "40",
            ]
        )
        == 0
    )
    unit = load_platform(device).unit("host_cpu.cpu")
    assert unit.efficiency["conv"] == pytest.approx(0.5, rel=1e-3)
    assert unit.efficiency["fc"] == pytest.approx(0.2, rel=1e-3)
    assert unit.memory_bandwidth_bytes_per_s == pytest.approx(20e9, rel=1e-3)
    assert unit.dispatch_s == pytest.approx(5e-6, rel=1e-3)
    assert read_calibration_comments(device)["host"] == "Pixel 8 (Tensor G3)"
    # one time per row: auto takes it as the median (a 1-thread table's auto is the
    # trimmed mean, which an imported table has no column for)
    assert read_calibration_comments(device)["statistic"] == "median"
    assert "fitted 12 ops" in capsys.readouterr().out


def test_cli_reports_bad_input_as_error(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("model,node,kind,flops,bytes,time_ms\nm,n,conv,1,1,-2\n")
    assert (
        main(["calibrate", "import-csv", str(tmp_path / "bad.csv"), "-o", str(tmp_path / "t.csv")])
        == EXIT_INVALID
    )
    assert "bad.csv:2: column 'time_ms'" in capsys.readouterr().err
    assert main(["calibrate", "fit", str(tmp_path / "missing.csv")]) == EXIT_INVALID
    assert "file not found" in capsys.readouterr().err
    (tmp_path / "ok.csv").write_text(GENERIC)
    args = ["calibrate", "fit", str(tmp_path / "ok.csv"), "--bandwidth-gb-s", "40"]
    assert main([*args, "--peak-gflops", "fp33=100"]) == EXIT_INVALID
    assert "DTYPE=GFLOPS" in capsys.readouterr().err
    assert main([*args, "--peak-gflops", "fp32=fast"]) == EXIT_INVALID
    assert "got 'fp32=fast'" in capsys.readouterr().err


def test_run_settings_validate():
    from calibration.ortrun import RunSettings

    assert RunSettings(runs=3, rounds=10).rounds == 3  # at most one run per round
    with pytest.raises(SocsimError, match="unknown clock 'cycles'"):
        RunSettings(clock="cycles")
    with pytest.raises(SocsimError, match="threads = 1"):
        RunSettings(threads=2, clock="cpu")
    with pytest.raises(SocsimError, match="runs >= 1"):
        RunSettings(runs=0)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            ["all", "-o", "{file}/work"],
            "cannot create the work folder {file}/work: {file} is a file",
        ),
        (["measure", "--quick", "-o", "{file}/m"], "cannot create the measurement folder"),
        (["fit", "{ok}", "-o", "{dir}"], "the device preset {dir} is a folder, not a file"),
        (["fit", "{ok}", "-o", "{file}/x.yaml"], "cannot create the device preset {file}/x.yaml"),
        (["validate", "{ok}", "-o", "{file}/v"], "cannot create the validation folder"),
        (["import-csv", "{ok}", "-o", "{file}/t.csv"], "cannot create the measurement CSV"),
        (
            ["all", "--no-docs", "-o", "{dir}/w", "--image", "{file}/i.png"],
            "cannot create the figure",
        ),
        (["published", "-o", "{file}/p"], "cannot create the output folder {file}/p"),
    ],
)
def test_every_calibrate_output_is_checked_before_any_work(tmp_path, capsys, command, message):
    """A bad -o (or --device, --image, --docs) is an error before minutes of measuring;
    `calibrate all -o` under a file used to end in an internal error (FileNotFoundError)."""
    names = {"file": tmp_path / "a_file", "dir": tmp_path, "ok": tmp_path / "ok.csv"}
    names["file"].write_text("not a folder")
    names["ok"].write_text(GENERIC)
    args = [part.format(**names) for part in command]
    assert main(["calibrate", *args]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert message.format(**names) in err
    assert "internal error" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "ok.csv"]  # nothing made
