"""Check-then-open races on files a scenario names (issue 16, item 2).

Another process swaps ``project/data`` between a real folder and a symlink to a folder
outside the project while traces, includes and ONNX models are loaded in a loop. Before,
the path was resolved and checked, then opened again by name: 248 of 4,883 trace loads
and 624 of 4,532 ONNX loads read the outside file. Now every such file is opened once
without following a final symlink, the opened descriptor's real path is checked, and only
that descriptor is read: a load either reads the project's file or is refused.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest
import yaml

from simulator.errors import SocsimError
from simulator.schema import Context, Loc
from simulator.spec.linkdefs import TraceFile
from simulator.spec.modelbuild import onnx_model
from simulator.spec.modeldefs import model_file_path
from simulator.spec.paths import allowed_dirs
from simulator.spec.presets import collect_presets
from tests.onnx_util import model, node

#: wall-clock budget of each loop (a bound on the test's cost, not an assertion)
LOOP_S = 0.7

SWAPPER = """
import os, sys
project, outside = sys.argv[1:]
data, parked, link = (os.path.join(project, n) for n in ("data", ".real", ".link"))
os.symlink(outside, link)
while True:  # data: a real folder, then a link to outside, and back (each rename atomic)
    os.rename(data, parked); os.rename(link, data)
    os.rename(data, link); os.rename(parked, data)
"""


def _files(folder: Path, marker: str) -> None:
    folder.mkdir(parents=True)
    (folder / "bw.csv").write_text(f"time_s,bandwidth_mbps\n0,{marker}\n")
    lib = {"presets": {"nodes": {f"n{marker}": {"role": "device", "units": {}}}}}
    (folder / "lib.yaml").write_text(yaml.safe_dump(lib))
    graph = model([node("Relu", ["x"], f"y{marker}")], {"x": [1, 4]}, [f"y{marker}"])
    onnx.save_model(graph, str(folder / "m.onnx"))


@pytest.fixture
def swapped(tmp_path):
    """``(project, allowed dirs)`` while another process swaps ``project/data``."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    _files(project / "data", "1")
    _files(outside, "666")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(project), str(outside)])
    try:
        time.sleep(0.05)
        yield project, allowed_dirs(project)
    finally:
        swapper.kill()
        swapper.wait()


def _loop(load) -> tuple[int, int, int]:
    """Run ``load`` until the budget is spent: (inside reads, outside reads, refusals)."""
    inside = outside = refused = 0
    end = time.monotonic() + LOOP_S
    while time.monotonic() < end:
        try:
            marker = load()
        except (SocsimError, OSError):
            refused += 1
            continue
        if marker == "666":
            outside += 1
        elif marker == "1":
            inside += 1
        else:
            refused += 1  # a problem recorded in the context
    return inside, outside, refused


def _check(counts: tuple[int, int, int]) -> None:
    inside, outside, _ = counts
    assert outside == 0, f"{outside} of {sum(counts)} loads read outside the project"
    assert inside > 0  # the loop did go through the real folder


def test_the_read_primitive_never_reads_outside(swapped):
    from simulator.spec.paths import read_regular_file

    project, allowed = swapped

    def load():
        text = read_regular_file(project / "data" / "bw.csv", 1000, allowed).decode()
        return text.split(",")[-1].strip()

    _check(_loop(load))


def test_traces_never_read_outside(swapped):
    project, allowed = swapped
    doc = {"f": "data/bw.csv"}

    def load():
        ctx = Context(base_dir=str(project), allowed_dirs=allowed)
        steps = TraceFile().check(doc["f"], Loc("f", doc, "f"), ctx)
        return None if ctx.problems else f"{steps[0][1] / 1e6:g}"

    _check(_loop(load))


def test_includes_never_read_outside(swapped):
    project, allowed = swapped
    document = {"include": ["data/lib.yaml"]}

    def load():
        ctx = Context(base_dir=str(project), allowed_dirs=allowed)
        found = collect_presets(document, project, "scenario.yaml", ctx, ())
        names = list(found.by_section["nodes"])
        return names[0][1:] if names else None

    _check(_loop(load))


def test_onnx_models_never_read_outside(swapped):
    project, allowed = swapped
    doc = {"onnx": "data/m.onnx"}

    def load():
        ctx = Context(base_dir=str(project), allowed_dirs=allowed)
        path = model_file_path(doc["onnx"], Loc("onnx", doc, "onnx"), ctx)  # the check
        spec = {"onnx": str(path), "batch": 1, "fuse": "none", "dtype": None}
        graph = onnx_model("m", spec, doc, Loc("models.m"), ctx, None)  # the use
        return graph.entry_ops()[0][1:] if graph is not None else None

    _check(_loop(load))


def test_a_final_symlink_swapped_in_is_refused(tmp_path):
    """The resolved path's last component turned into a link after the check."""
    (tmp_path / "in").mkdir()
    (tmp_path / "secret").write_text("secret")
    (tmp_path / "in" / "bw.csv").symlink_to(tmp_path / "secret")
    from simulator.spec.paths import read_regular_file

    with pytest.raises(OSError, match="symbolic link"):
        read_regular_file(tmp_path / "in" / "bw.csv", 100, [(tmp_path / "in").resolve()])
