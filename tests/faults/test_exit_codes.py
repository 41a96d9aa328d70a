"""Issue 16: distinct exit statuses (simulator/exitcodes.py), each from a real command.

On the old code a crash and a validation failure shared status 1, bad input was 2 like
an argparse usage error, and an unexpected exception printed a raw traceback. 130 and
143 are checked on a real process in test_signals.py, 3 for a full stdout in
test_output_stdout.py.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest
from faults.output_fixtures import socsim, tiny_document, write_scenario

import simulator.engine
import simulator.output.atomic as atomic
from simulator.cli import main
from simulator.errors import SocsimError
from simulator.exitcodes import (
    EXIT_INTERNAL,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
)


def test_the_contract_values():
    import simulator.exitcodes as codes

    values = {name: getattr(codes, name) for name in codes.__all__}
    assert values == {
        "EXIT_OK": 0, "EXIT_INVALID": 1, "EXIT_USAGE": 2, "EXIT_RUNTIME": 3,
        "EXIT_INTERNAL": 4, "EXIT_INTERRUPTED": 130, "EXIT_TERMINATED": 143,
    }  # fmt: skip


def test_ok_invalid_and_validate(tmp_path):
    good = write_scenario(tmp_path, tiny_document())
    bad = write_scenario(tmp_path, tiny_document(seed=-1), "bad.yaml")
    assert main(["run", str(good), "-o", str(tmp_path / "o")]) == EXIT_OK
    assert main(["validate", str(good)]) == EXIT_OK
    assert main(["validate", str(bad)]) == EXIT_INVALID
    assert main(["run", str(bad)]) == EXIT_INVALID
    assert main(["run", str(tmp_path / "missing.yaml")]) == EXIT_INVALID


def test_usage_error_is_2_from_a_real_process():
    status, err = socsim("run", "--no-such-option")
    assert status == EXIT_USAGE and "usage:" in err


def test_a_runtime_failure_is_3(tmp_path, monkeypatch, capsys):
    scenario = write_scenario(tmp_path, tiny_document())

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "_write_file", full)
    assert main(["run", str(scenario), "-o", str(tmp_path / "o")]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing was written" in err


def _crash(*args, **kwargs):
    return 1 / 0


def test_a_bug_is_4_with_one_paragraph_and_the_traceback_in_a_file(tmp_path, monkeypatch, capsys):
    scenario = write_scenario(tmp_path, tiny_document())
    monkeypatch.setattr(simulator.engine, "simulate", _crash)
    monkeypatch.delenv("SOCSIM_TRACEBACK", raising=False)
    assert main(["run", str(scenario), "-o", str(tmp_path / "o")]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "ZeroDivisionError" in err and "bug in socsim" in err
    saved = Path(re.search(r"traceback is in (\S+)", err).group(1))
    try:
        text = saved.read_text()
        assert text.startswith("Traceback") and "_crash" in text
    finally:
        saved.unlink()
    monkeypatch.setenv("SOCSIM_TRACEBACK", "1")
    assert main(["run", str(scenario), "-o", str(tmp_path / "o")]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_crash" in err
    Path(re.search(r"traceback is in (\S+)\.txt", err).group(1) + ".txt").unlink()


def test_memory_error_is_one_message_not_thousands(tmp_path, monkeypatch, capsys):
    scenario = write_scenario(tmp_path, tiny_document())

    class Dying:
        def __del__(self):
            raise MemoryError  # what teardown does once memory is gone

    def exhaust(*args, **kwargs):
        keep = [Dying() for _ in range(1000)]
        del keep
        raise MemoryError

    monkeypatch.setattr(simulator.engine, "simulate", exhaust)
    assert main(["run", str(scenario), "-o", str(tmp_path / "o")]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out of memory" in err and "Exception ignored" not in err


def test_an_unreachable_dask_scheduler_is_a_clear_error_within_the_timeout(monkeypatch):
    pytest.importorskip("distributed")
    from simulator.sweep import executors

    monkeypatch.setattr(executors, "SCHEDULER_TIMEOUT_S", 0.5)
    with pytest.raises(SocsimError, match=r"cannot reach the dask scheduler tcp://127\.0\.0\.1:9"):
        next(executors.dask(len, [[1]], scheduler="tcp://127.0.0.1:9"))


@pytest.mark.parametrize(
    ("assignment", "said"),
    [
        ("links.uplnk.bandwidth_mbps=5", "no key 'uplnk' in links; keys there: uplink "
         "(did you mean 'uplink'?)"),
        ("links.uplink.bandwidth_mbps=-5", "links.uplink.bandwidth_mbps: --set "
         "links.uplink.bandwidth_mbps=-5: expected a number"),
        ("workload[4].count=1", "workload[4].count: workload has 1 item(s); no index [4]"),
        ("links.uplink.bandwidth_mbps", "--set takes PATH=VALUE"),
        ("placement.policy=singel", "unknown placement policy 'singel'"),
    ],
)  # fmt: skip
def test_a_bad_run_set_is_invalid_input_with_its_yaml_path(tmp_path, capsys, assignment, said):
    scenario = write_scenario(tmp_path, tiny_document())
    out = tmp_path / "o"
    status = main(["run", str(scenario), "-o", str(out), "--set", assignment, "--json"])
    assert status == EXIT_INVALID
    captured = capsys.readouterr()
    assert captured.out == "" and said in captured.err and "Traceback" not in captured.err
    assert not out.exists()


def test_quiet_and_verbose_together_is_a_usage_error():
    status, err = socsim("run", "x.yaml", "-q", "-v")
    assert status == EXIT_USAGE and "not allowed with argument -q/--quiet" in err


def test_sweep_json_errors_keep_stdout_empty(tmp_path, capsys):
    scenario = write_scenario(tmp_path, tiny_document())
    status = main(["sweep", str(scenario), "--set", "links.uplink.bandwith_mbps=1,2", "--json"])
    assert status == EXIT_INVALID
    captured = capsys.readouterr()
    assert captured.out == "" and "did you mean 'bandwidth_mbps'?" in captured.err


def test_a_full_disk_anywhere_is_3_and_names_the_file_not_a_bug(tmp_path, monkeypatch, capsys):
    """A write outside socsim's atomic writer (``calibrate all`` saving a 500 MB ONNX
    model) that meets a full disk: exit 3, the file named, no traceback saved."""
    scenario = write_scenario(tmp_path, tiny_document())

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/out/vgg19.onnx")

    monkeypatch.setattr(simulator.engine, "simulate", full)
    assert main(["run", str(scenario), "-o", str(tmp_path / "o")]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bug" not in err and "traceback" not in err
    assert "No space left on device writing /data/out/vgg19.onnx" in err
    assert "nothing was written" in err and "Free space" in err
