"""What a sweep's workers reuse between points (issue 17, item 5): built models, cached by
their exact inputs; and a resume that makes only its pending points.

The property: a sweep's table is byte-identical with and without the caches, and across
the serial and processes executors, whatever the seed and the swept values."""

from __future__ import annotations

import threading

import numpy as np
import onnx
import pytest
from faults.sweep_helpers import CrashError, crash_after, small_sweep
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweep.conftest import write_sweep

import simulator.sweep.points as points_module
import simulator.sweep.store as store_module
from simulator.errors import ModelError
from simulator.graph.zoo import build_zoo_model
from simulator.schema import Context, Loc
from simulator.spec.modelbuild import onnx_model, zoo_model
from simulator.spec.modelcache import MODEL_CACHE, BoundedCache, exact_key
from simulator.spec.paths import allowed_dirs
from simulator.sweep import prepare_sweep, run_prepared, run_sweep
from simulator.sweep.execute import PLAN_CACHE, no_caches
from tests.onnx_util import model, node


def test_the_cache_keeps_the_most_recently_used_values_up_to_its_size():
    cache: BoundedCache = BoundedCache(2)
    built = []

    def build(key):
        return lambda: built.append(key) or f"value {key}"

    for key in ("a", "b", "a", "c", "a", "b"):  # c pushes b out (a was used after b)
        cache.get(key, build(key))
    assert built == ["a", "b", "c", "b"] and len(cache) == 2
    assert (cache.hits, cache.misses) == (2, 4)
    with cache.disabled():
        cache.get("a", build("a"))
    assert built[-1] == "a" and cache.enabled


def test_threads_share_a_cache_without_losing_its_bound():
    """A Dask LocalCluster of threads runs points of one process at once."""
    cache: BoundedCache = BoundedCache(3)
    errors = []

    def work(offset):
        try:
            for i in range(2000):
                key = (i * 7 + offset) % 5
                assert cache.get(key, lambda k=key: k * 10) == key * 10
        except Exception as exc:  # collected: an exception in a thread is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(cache) == 3 and cache.hits + cache.misses == 12_000


def test_a_failed_build_is_not_kept():
    cache: BoundedCache = BoundedCache(2)

    def fail():
        raise ModelError("bad options", "m")

    for _ in range(2):
        with pytest.raises(ModelError):
            cache.get("k", fail)
    assert len(cache) == 0 and cache.misses == 2


def test_keys_tell_apart_every_value_a_build_could_tell_apart():
    values = [1, 1.0, True, 0.0, -0.0, "1", [1], (1,), {"a": 1}, {"a": 1.0}, None]
    assert len({exact_key(v) for v in values}) == len(values)
    assert exact_key({"a": 1, "b": 2}) == exact_key({"b": 2, "a": 1})


def _zoo(name: str, **options):
    spec = {"zoo": name, "dtype": "fp32", "options": options}
    return zoo_model("m", spec, {}, Loc("models.m"), Context(), None)


def test_a_zoo_model_is_built_once_per_recipe_and_equals_a_fresh_build():
    MODEL_CACHE.clear()
    first = _zoo("mobilenet_v1", width_multiplier=0.5)
    assert _zoo("mobilenet_v1", width_multiplier=0.5) is first
    other = _zoo("mobilenet_v1", width_multiplier=0.75)
    assert other is not first and other.total_flops > first.total_flops
    assert _zoo("mobilenet_v1", width_multiplier=0.5, resolution=224) is not first
    fresh = build_zoo_model("mobilenet_v1", "fp32", width_multiplier=0.5)
    assert list(first) == list(fresh) and list(first.edges()) == list(fresh.edges())
    assert (MODEL_CACHE.hits, MODEL_CACHE.misses) == (1, 3)


def test_an_onnx_import_is_cached_by_what_was_read_not_by_its_path(tmp_path):
    """An edited file, or an edited external tensor beside it, is imported again."""
    shape = onnx.numpy_helper.from_array(np.array([1, 8, 2], dtype=np.int64), "shape")
    graph = model([node("Reshape", ["x", "shape"], "y")], {"x": [1, 16]}, ["y"], [shape])
    path = tmp_path / "r.onnx"
    onnx.save_model(
        graph, str(path), save_as_external_data=True, location="r.bin", size_threshold=0
    )
    ctx = Context(base_dir=str(tmp_path), allowed_dirs=allowed_dirs(tmp_path))
    spec = {"onnx": str(path), "batch": 1, "fuse": "none", "dtype": None}

    def load(name="m"):
        return onnx_model(name, spec, {}, Loc(f"models.{name}"), ctx, None)

    MODEL_CACHE.clear()
    first = load()
    assert load() is first and load("n") is not first  # the name is an input
    (tmp_path / "r.bin").write_bytes(np.array([1, 4, 4], dtype=np.int64).tobytes())
    assert load() is not first
    path.write_bytes(model([node("Relu", ["x"], "y")], {"x": [1, 16]}, ["y"]).SerializeToString())
    relu = load()
    assert relu.op("y").kind == "activation" and (MODEL_CACHE.hits, MODEL_CACHE.misses) == (1, 4)


def _zoo_sweep(folder, seed: int, widths: list[float], bandwidths: list[float]):
    """Mobilenet at swept widths (cache keys that must differ), Poisson arrivals (the
    seeds matter), two replicates."""
    return write_sweep(
        folder,
        {
            "parameters": {
                "models.net.options.width_multiplier": widths,
                "links.uplink.bandwidth_mbps": bandwidths,
            },
            "replicates": 2,
        },
        seed=seed,
        models={"net": {"zoo": "mobilenet_v1", "options": {"width_multiplier": 1.0}}},
        workload=[
            {
                "app": "app",
                "model": "net",
                "source": "phone",
                "arrival": {"process": "poisson", "rate_hz": 2},
                "count": 3,
            }
        ],
    )


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**31),
    widths=st.lists(st.sampled_from([0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=2, unique=True),
    bandwidths=st.lists(st.sampled_from([1.0, 10.0, 1000.0]), min_size=1, max_size=2, unique=True),
)
def test_tables_are_byte_identical_with_and_without_caches_on_every_executor(
    tmp_path_factory, seed, widths, bandwidths
):
    folder = tmp_path_factory.mktemp("caches")
    path = _zoo_sweep(folder, seed, widths, bandwidths)
    MODEL_CACHE.clear()
    run_sweep(path, folder / "serial", quiet=True, executor="serial")
    assert MODEL_CACHE.hits > 0  # the replicates and the other bandwidths reused the models
    run_sweep(path, folder / "processes", quiet=True, executor="processes", workers=2)
    with no_caches():  # forked workers inherit the switch
        run_sweep(path, folder / "fresh", quiet=True, executor="serial")
        run_sweep(path, folder / "fresh_processes", quiet=True, executor="processes", workers=2)
    reference = (folder / "serial" / "sweep.csv").read_bytes()
    assert b"ok" in reference and b"error" not in reference.split(b"\n", 1)[1]
    for name in ("processes", "fresh", "fresh_processes"):
        assert (folder / name / "sweep.csv").read_bytes() == reference, name


def test_the_fast_path_places_once_per_platform_and_model_not_once_per_point(tmp_path):
    """Deadlines do not change the plan, bandwidths do: 2 of 6 points place the model."""
    sweep = {
        "parameters": {
            "workload[0].deadline_ms": [1, 1000, 100000],
            "links.uplink.bandwidth_mbps": [1, 1000],
        },
        "fast": True,
        "executor": {"name": "serial"},
    }
    path = write_sweep(tmp_path, sweep)
    PLAN_CACHE.clear()
    run_sweep(path, tmp_path / "cached", quiet=True)
    assert (PLAN_CACHE.hits, PLAN_CACHE.misses) == (4, 2)
    with no_caches():
        fresh = run_sweep(path, tmp_path / "fresh", quiet=True)
    assert fresh["decision"].nunique() == 2 and fresh["deadline_met_rate"].nunique() > 1
    cached = (tmp_path / "cached" / "sweep.csv").read_bytes()
    assert cached == (tmp_path / "fresh" / "sweep.csv").read_bytes()


def test_a_resume_makes_only_its_pending_points_and_leaves_sweep_json_alone(tmp_path, monkeypatch):
    path = small_sweep(tmp_path)  # 4 points x 2 replicates, serial
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as patch:
        crash_after(patch, 3)  # (0, 0), (0, 1) and (1, 0) are journaled
        with pytest.raises(CrashError):
            run_sweep(path, out, quiet=True, batch_size=1)
    written = (out / "sweep.json").read_bytes()
    prepared = prepare_sweep(path)
    made = []
    real = points_module.parse_scenario

    def counted(document, **kwargs):
        made.append(document["links"]["uplink"]["bandwidth_mbps"])
        return real(document, **kwargs)

    def no_rewrite(*args, **kwargs):
        raise AssertionError("a resume rewrote sweep.json")

    monkeypatch.setattr(points_module, "parse_scenario", counted)
    monkeypatch.setattr(store_module, "write_meta", no_rewrite)
    table = run_prepared(prepared, out, quiet=True)
    assert made == [10, 100, 1000]  # points 1 (its replicate 1), 2 and 3; point 0 never
    assert len(table) == 8 and (out / "sweep.json").read_bytes() == written
