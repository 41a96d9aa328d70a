"""onnxruntime's optimised graphs as calibration saves them, and the order of measuring:
every graph saved (shapes only) before the first timed round."""

from __future__ import annotations

import pytest


def _conv_model(tmp_path, name="m"):
    from calibration.onnxbuild import Builder

    b = Builder(seed=0)
    b.relu(b.conv(b.input([1, 8, 16, 16]), 8, 32, 3))
    source = tmp_path / f"{name}.onnx"
    source.write_bytes(b.model(name).SerializeToString())
    return source


def test_the_optimised_graph_comes_from_a_session_of_its_own(tmp_path):
    """A throwaway session writes the graph ORT runs (Conv + Relu fused into one node), so
    the profiled session need not save it; its weights keep their shapes and lose their
    values (ORT's external-data file is deleted), and socsim costs it as it costs the
    graph with its weights."""
    import onnx

    from calibration.measure import onnx_graph
    from calibration.onnxbuild import Builder
    from calibration.ortsession import EXTERNAL_MIN_BYTES, save_optimized_graph

    b = Builder(seed=0)
    x = b.input([1, 8, 16, 16])
    b.relu(b.conv(x, 8, 32, 3))
    source = tmp_path / "m.onnx"
    source.write_bytes(b.model("m").SerializeToString())
    optimized = tmp_path / "m.ort_extended.onnx"
    save_optimized_graph(source, optimized, threads=1)
    graph = onnx.load(str(optimized)).graph
    assert [n.op_type for n in graph.node] == ["FusedConv"]
    assert sorted(tmp_path.iterdir()) == [
        tmp_path / "m.onnx",
        optimized,
        tmp_path / "m.ort_extended.onnx.key.json",
    ]
    weight = {t.name: t for t in graph.initializer}[graph.node[0].input[1]]
    assert list(weight.dims) == [32, 8, 3, 3]  # 9,216 bytes: external, now shape only
    assert EXTERNAL_MIN_BYTES <= 32 * 8 * 9 * 4
    assert not weight.raw_data and not weight.external_data
    bias = {t.name: t for t in graph.initializer}[graph.node[0].input[2]]
    assert len(bias.raw_data) == 32 * 4  # small tensors keep their values
    op = onnx_graph(optimized, "none").op(graph.node[0].name)
    assert op.macs == 8 * 9 * 32 * 16 * 16  # in channels x taps x out channels x pixels
    assert op.flops == 2 * op.macs + 32 * 16 * 16  # + the bias (the fused ReLU counts 0)
    assert op.weight_bytes == 32 * 8 * 9 * 4 + 32 * 4


def test_the_optimised_graph_is_saved_once_per_model_file_and_runtime(tmp_path):
    """The second thread count (and a second run in the same folder) reuses the graph;
    a changed model file, or a key that is missing or not ours, saves it again."""
    import json
    import os

    from calibration.onnxbuild import Builder
    from calibration.ortsession import save_optimized_graph

    b = Builder(seed=0)
    b.relu(b.conv(b.input([1, 8, 16, 16]), 8, 32, 3))
    source = tmp_path / "m.onnx"
    source.write_bytes(b.model("m").SerializeToString())
    optimized = tmp_path / "m.ort_extended.onnx"
    key = tmp_path / "m.ort_extended.onnx.key.json"
    save_optimized_graph(source, optimized, threads=1)
    assert json.loads(key.read_text())["bytes"] == source.stat().st_size
    optimized.write_bytes(b"marker")  # reused as is: not written again
    save_optimized_graph(source, optimized, threads=2)
    assert optimized.read_bytes() == b"marker"
    stat = source.stat()  # the model file changed (a rebuilt corpus): saved again
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    save_optimized_graph(source, optimized, threads=1)
    assert optimized.read_bytes() != b"marker"
    optimized.write_bytes(b"marker")
    key.write_text("{not json")  # a damaged key: saved again
    save_optimized_graph(source, optimized, threads=1)
    assert optimized.read_bytes() != b"marker"
    assert json.loads(key.read_text())["mtime_ns"] == source.stat().st_mtime_ns


def test_every_graph_is_saved_before_the_first_round(tmp_path):
    """The graphs are saved on a thread beside the sessions' opening; the rounds (timed)
    start only once every one is written, and each is costed under ORT's node names."""
    from calibration.ortrun import RunSettings, run_models

    models = {n: _conv_model(tmp_path, n) for n in ("a", "b", "c")}
    work = tmp_path / "work"
    seen = []

    def on_round(r: int) -> None:
        seen.append((r, sorted(p.name for p in work.glob("*.ort_extended.onnx"))))

    settings = RunSettings(warmup=1, runs=2, rounds=2)
    runs = run_models(models, settings, work, on_round=on_round)
    graphs = [f"{n}.ort_extended.onnx" for n in "abc"]
    assert seen == [(0, graphs), (1, graphs)]
    assert not list(work.glob("*.data"))
    for name, run in runs.items():
        assert run.optimized_path == work / f"{name}.ort_extended.onnx"
        assert [n.node for n in run.nodes] == ["conv_3"]  # Conv + ReLU: one FusedConv
        assert len(run.e2e_s) == 2


def test_a_model_onnxruntime_cannot_load_stops_before_any_round(tmp_path):
    from calibration.ortrun import RunSettings, run_models

    good = _conv_model(tmp_path, "good")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    rounds = []
    with pytest.raises(Exception, match="INVALID_PROTOBUF"):  # onnxruntime's own error
        run_models(
            {"good": good, "bad": bad},
            RunSettings(warmup=1, runs=2, rounds=2),
            tmp_path / "work",
            on_round=rounds.append,
        )
    assert rounds == []


def test_a_failed_rewrite_leaves_no_partial_graph_and_no_key(tmp_path, monkeypatch):
    """A full disk while the graph is rewritten without its weights: the OSError reaches
    the command (exit status 3 there), no ``.partial`` file stays, and no key marks the
    graph as saved (the next run saves it again)."""
    import errno

    import calibration.ortsession as ortsession

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ortsession.os, "replace", full)
    source = _conv_model(tmp_path)
    optimized = tmp_path / "m.ort_extended.onnx"
    with pytest.raises(OSError, match="No space left"):
        ortsession.save_optimized_graph(source, optimized, threads=1)
    assert not (tmp_path / "m.ort_extended.onnx.partial").exists()
    assert not (tmp_path / "m.ort_extended.onnx.key.json").exists()


def test_at_two_threads_the_graphs_are_saved_before_any_session_opens(tmp_path, monkeypatch):
    """No idle core at two threads: the saves would slow the warm-ups that set the run
    counts, so they all finish first."""
    import calibration.ortrun as ortrun

    models = {n: _conv_model(tmp_path, n) for n in ("a", "b")}
    work = tmp_path / "work"
    seen = []
    opening = ortrun._open_sessions

    def watched(*args, **kwargs):
        seen.append(sorted(p.name for p in work.glob("*.ort_extended.onnx")))
        return opening(*args, **kwargs)

    monkeypatch.setattr(ortrun, "_open_sessions", watched)
    ortrun.run_models(models, ortrun.RunSettings(threads=2, warmup=1, runs=1, rounds=1), work)
    assert seen == [["a.ort_extended.onnx", "b.ort_extended.onnx"]]


def test_a_wait_for_the_saves_is_announced(tmp_path, monkeypatch):
    """Saves slower than the sessions' opening: the progress says what it waits for
    instead of falling silent after the last model loaded."""
    import threading

    import calibration.ortrun as ortrun

    release = threading.Event()
    saving = ortrun.save_optimized_graph

    def slow(*args):
        release.wait(timeout=30)  # held until the sessions are open
        return saving(*args)

    monkeypatch.setattr(ortrun, "save_optimized_graph", slow)
    said = []

    def progress(text: str) -> None:
        said.append(text)
        if text.startswith("saving the optimised graphs"):
            release.set()

    models = {n: _conv_model(tmp_path, n) for n in ("a", "b")}
    settings = ortrun.RunSettings(warmup=1, runs=1, rounds=1)
    ortrun.run_models(models, settings, tmp_path / "w", progress)
    waits = [t for t in said if t.startswith("saving")]
    assert waits == ["saving the optimised graphs: 0 of 2 done"]
    assert said.index(waits[0]) > said.index("loading b (2 of 2)")
    assert (tmp_path / "w" / "b.ort_extended.onnx").exists()
