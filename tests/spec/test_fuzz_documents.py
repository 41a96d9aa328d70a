"""Hostile scenario documents: every one loads or fails with a ScenarioError naming a YAML
path — never another exception, a hang or a silently accepted bad value.

Documents start from the valid random scenarios of ``tests/strategies.py`` and are then
mutated (wrong types, negative/zero/NaN/infinite/huge values, missing sections, unknown
keys, cyclic and dangling model edges, duplicate names); files are corrupted (empty,
non-UTF-8, random bytes, alias bombs, Python tags, deep nesting, include cycles,
unreadable includes).
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import signal
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.errors import ScenarioError
from simulator.spec import load_scenario
from simulator.spec.yamlio import MAX_DEPTH
from simulator.sweep.design import MAX_SWEEP_RUNS

#: Seconds one example may take before it counts as a hang (a valid small document
#: loads in well under 0.1 s; the margin is for a loaded 2-core machine).
HANG_S = 20
FUZZ = settings(
    max_examples=int(os.environ.get("SOCSIM_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

HOSTILE_VALUES = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            "",
            "abc",
            -1,
            0,
            -0.0,
            1e308,
            10**400,
            2**63,
            math.nan,
            math.inf,
            -math.inf,
            "nan",
            ".inf",
            "1e999",
            [],
            {},
            [1, 2],
            {"x": 1},
            "../../etc/passwd",
            "<script>alert(1)</script>",
            "\u202e\x00",
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
)


class Hang(BaseException):
    """An example ran too long (a BaseException: no ``except OSError`` swallows it)."""


@contextlib.contextmanager
def time_bound(seconds: float = HANG_S):
    """Fail an example that runs longer than ``seconds`` (a hang) instead of blocking CI."""

    def expired(signum, frame):
        raise Hang(f"loading took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def load_or_problems(path: Path):
    """The loaded scenario, or the problems of the ScenarioError; any other exception
    (or a hang) fails the test."""
    with time_bound():
        try:
            return load_scenario(path), ()
        except ScenarioError as exc:
            problems = exc.problems
    assert problems, "a ScenarioError without problems"
    for problem in problems:
        assert isinstance(problem.path, str)
        assert problem.message and problem.file
        str(problem)  # printable
    return None, problems


def _paths(value, prefix=()):
    """Every (path, value) inside a document, the root excluded."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        yield (*prefix, key), child
        yield from _paths(child, (*prefix, key))


def _parent(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _yaml_path(path) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def _write(tmp_path: Path, doc, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@st.composite
def replaced_values(draw):
    """A valid document with one value (anywhere) replaced by a hostile one."""
    doc = draw(scenarios(max_ops=5))
    path, old = draw(st.sampled_from(list(_paths(doc))))
    new = draw(HOSTILE_VALUES)
    _parent(doc, path)[path[-1]] = new
    return doc, path, old, new


@FUZZ
@given(case=replaced_values())
def test_a_replaced_value_loads_or_is_named(tmp_path_factory, case):
    doc, path, old, new = case
    scenario, problems = load_or_problems(_write(tmp_path_factory.mktemp("fuzz"), doc))
    if scenario is not None:
        return
    # reported at the value, inside it or at a mapping holding it; a replaced name (text)
    # may instead be reported where it is used
    where = _yaml_path(path)
    assert any(_related(p.path, where) for p in problems) or isinstance(old, str), (
        where,
        new,
        problems,
    )


def _related(problem_path: str, mutated: str) -> bool:
    """``problem_path`` is the mutated path, inside it, or one of its enclosing paths."""

    def inside(a: str, b: str) -> bool:
        return a == b or (bool(b) and a.startswith((b + ".", b + "[")))

    return inside(problem_path, mutated) or inside(mutated, problem_path)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@FUZZ
@given(doc=scenarios(max_ops=5), data=st.data())
def test_non_finite_numbers_and_text_for_numbers_are_never_accepted(tmp_path_factory, doc, data):
    numbers = [(p, v) for p, v in _paths(doc) if _is_number(v) and p[0] != "seed"]
    path, _ = data.draw(st.sampled_from(numbers))
    bad = data.draw(st.sampled_from([math.nan, math.inf, -math.inf, "abc", [1], {"a": 1}]))
    _parent(doc, path)[path[-1]] = bad
    scenario, problems = load_or_problems(_write(tmp_path_factory.mktemp("fuzz"), doc))
    assert scenario is None, f"{_yaml_path(path)} = {bad!r} was accepted"
    assert any(
        p.path == _yaml_path(path) or _yaml_path(path).startswith(p.path + ".") for p in problems
    ), (path, problems)


@FUZZ
@given(doc=scenarios(max_ops=5), data=st.data())
def test_unknown_keys_and_missing_sections_are_reported(tmp_path_factory, doc, data):
    mappings = [((), doc)] + [(p, v) for p, v in _paths(doc) if isinstance(v, dict)]
    path, target = data.draw(st.sampled_from(mappings))
    target[data.draw(st.sampled_from(["colour", "latency", "x_ms", "Name"]))] = 1
    dropped = None
    if data.draw(st.booleans()):
        dropped = data.draw(st.sampled_from(["nodes", "models", "workload", "placement"]))
        doc.pop(dropped)
    scenario, problems = load_or_problems(_write(tmp_path_factory.mktemp("fuzz"), doc))
    assert scenario is None
    # a missing key is reported at the mapping that lacks it (the root for a section)
    assert all(p.path or p.message.startswith("missing required key") for p in problems)
    if dropped is None:
        assert any(_yaml_path(path) in p.path for p in problems), problems
    elif dropped != "placement":  # the apps may give their own placement? no: none do
        assert any(f"'{dropped}'" in p.message for p in problems), problems


GRAPH_DAMAGE = ("cycle", "self_loop", "dangling_src", "dangling_dst", "duplicate_op", "no_ops")


@FUZZ
@given(doc=scenarios(max_ops=5), damage=st.sampled_from(GRAPH_DAMAGE), data=st.data())
def test_broken_model_graphs_are_reported(tmp_path_factory, doc, damage, data):
    model = doc["models"]["m"]
    ops, edges = model["ops"], model["edges"]
    if damage == "cycle" and edges:
        edge = data.draw(st.sampled_from(edges))
        edges.append({"src": edge["dst"], "dst": edge["src"]})
    elif damage in ("self_loop", "cycle"):
        edges.append({"src": "op0", "dst": "op0"})
    elif damage == "dangling_src":
        edges.append({"src": "ghost", "dst": ops[-1]["name"]})
    elif damage == "dangling_dst":
        edges.append({"src": ops[0]["name"], "dst": "ghost"})
    elif damage == "duplicate_op":
        ops.append(copy.deepcopy(data.draw(st.sampled_from(ops))))
    else:
        model["ops"] = []
        model["edges"] = []
    scenario, problems = load_or_problems(_write(tmp_path_factory.mktemp("fuzz"), doc))
    assert scenario is None, damage
    assert any(p.path.startswith("models.m") for p in problems), problems


@FUZZ
@given(doc=scenarios(max_ops=3), data=st.data())
def test_duplicate_names_are_reported(tmp_path_factory, doc, data):
    kind = data.draw(st.sampled_from(["app", "link", "yaml_key"]))
    folder = tmp_path_factory.mktemp("fuzz")
    if kind == "app":
        doc["workload"].append(copy.deepcopy(doc["workload"][0]))
        path = _write(folder, doc)
    elif kind == "link" and doc["links"]:
        doc["links"]["again"] = copy.deepcopy(doc["links"]["up"])
        path = _write(folder, doc)
    else:  # a key written twice (a dict cannot hold it: edit the text)
        path = _write(folder, doc)
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("seed:", "scheduler: fcfs\nseed:", 1), encoding="utf-8")
    scenario, problems = load_or_problems(path)
    assert scenario is None, kind
    assert all(p.path for p in problems), problems


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)
)
HOSTILE_FILES = {
    "empty": b"",
    "only_comment": b"# nothing\n",
    "null": b"~\n",
    "scalar": b"42\n",
    "list": b"- 1\n- 2\n",
    "latin1": "name: caf\xe9\n".encode("latin-1"),
    "utf16": "name: x\n".encode("utf-16"),
    "nul_bytes": b"name: a\x00b\n",
    "binary": bytes(range(256)),
    "python_object": b"name: !!python/object/apply:os.system ['echo pwned']\n",
    "python_name": b"seed: !!python/name:os.system\n",
    "unknown_tag": b"seed: !custom 1\n",
    "alias_bomb": BOMB.encode(),
    "recursive_alias": b"nodes: &n {phone: *n}\n",
    "deep_lists": b"x: " + b"[" * (MAX_DEPTH + 50) + b"]" * (MAX_DEPTH + 50) + b"\n",
    "deep_maps": b"x: " + b"{a: " * (MAX_DEPTH + 50) + b"1" + b"}" * (MAX_DEPTH + 50) + b"\n",
    "two_documents": b"name: a\n---\nname: b\n",
    "unclosed": b"nodes: {phone: [\n",
    "tabs": b"nodes:\n\tphone: 1\n",
    "set_and_timestamp": b"name: 2024-01-01\nseed: !!set {1, 2}\n",
    "binary_tag": b"name: !!binary aGVsbG8=\n",
    "huge_int": b"seed: " + b"9" * 5000 + b"\n",
    "bad_merge": b"a: {<<: 1}\n",
    "unhashable_key": b"? [1, 2]\n: x\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_files_fail_with_a_scenario_error(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(HOSTILE_FILES[name])
    scenario, problems = load_or_problems(path)
    assert scenario is None
    assert all(p.file == str(path) for p in problems)


@FUZZ
@given(raw=st.binary(max_size=300))
def test_random_bytes_load_or_fail_cleanly(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "random.yaml"
    path.write_bytes(raw)
    load_or_problems(path)


@FUZZ
@given(text=st.text(alphabet="{}[]:,-&*!?|>#'\" \n\tab1.%@`", max_size=120))
def test_random_yaml_punctuation_loads_or_fails_cleanly(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "punct.yaml"
    path.write_text(text, encoding="utf-8")
    load_or_problems(path)


# -- includes -----------------------------------------------------------------------------
def _library(name: str) -> dict:
    return {
        "presets": {
            "nodes": {
                name: {
                    "role": "device",
                    "units": {
                        "cpu": {
                            "kind": "cpu",
                            "peak_gflops": {"fp32": 1},
                            "idle_w": 0.1,
                            "active_w": 1.0,
                        }
                    },
                }
            }
        }
    }


def _with_include(doc: dict, *names: str) -> dict:
    doc = dict(doc)
    doc["include"] = list(names)
    return doc


def test_include_cycles_are_reported(tmp_path, small_soc):
    a, b = _library("pa"), _library("pb")
    a["include"], b["include"] = ["b.yaml"], ["a.yaml"]
    _write(tmp_path, a, "a.yaml")
    _write(tmp_path, b, "b.yaml")
    scenario, problems = load_or_problems(_write(tmp_path, _with_include(small_soc, "a.yaml")))
    assert scenario is None
    assert any("include cycle" in p.message and p.path == "include[0]" for p in problems)
    selfish = _library("ps")
    selfish["include"] = ["s.yaml"]
    _write(tmp_path, selfish, "s.yaml")
    _, problems = load_or_problems(_write(tmp_path, _with_include(small_soc, "s.yaml")))
    assert any("include cycle" in p.message for p in problems)


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "empty", "not_utf8", "scalar"])
def test_unreadable_includes_are_reported(tmp_path, small_soc, kind):
    target = tmp_path / "lib.yaml"
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)  # reading it would block forever
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "not_utf8":
        target.write_bytes(b"presets: {nodes: {p: {role: caf\xe9}}}\n")
    elif kind == "scalar":
        target.write_text("7\n")
    scenario, problems = load_or_problems(_write(tmp_path, _with_include(small_soc, "lib.yaml")))
    assert scenario is None
    assert any(p.path.startswith("include") or p.file == str(target) for p in problems), problems


@FUZZ
@given(
    content=st.one_of(
        st.binary(max_size=200),
        st.lists(
            st.tuples(
                st.one_of(st.floats(), st.integers(-5, 10**6), st.text(max_size=5)),
                st.one_of(st.floats(), st.integers(-5, 10**6), st.text(max_size=5)),
            ),
            max_size=6,
        ).map(lambda rows: "".join(f"{a},{b}\n" for a, b in rows).encode()),
    )
)
def test_bandwidth_trace_files_with_any_content_load_or_are_named(
    tmp_path_factory, phone_cloud, content
):
    folder = tmp_path_factory.mktemp("trace")
    (folder / "bw.csv").write_bytes(content)
    doc = copy.deepcopy(phone_cloud)
    link = next(iter(doc["links"]))
    doc["links"][link]["bandwidth_trace_file"] = "bw.csv"
    scenario, problems = load_or_problems(_write(folder, doc))
    if scenario is None:
        # the file's rows are checked at the key; what the link itself refuses (a trace
        # ending at 0 bit/s) at the link, naming the trace
        assert len(problems) == 1, problems
        assert problems[0].path == f"links.{link}.bandwidth_trace_file" or (
            problems[0].path == f"links.{link}" and "bandwidth_trace" in problems[0].message
        )
        return
    steps = scenario.platform.network.links[link].bandwidth_trace
    times = [t for t, _ in steps]
    assert steps and times == sorted(set(times))  # increasing
    assert all(math.isfinite(b) and b >= 0 for _, b in steps)


SWEEP_PATHS = st.sampled_from(
    ["workload[0].count", "links.up.latency_ms", "nodes.phone.units.u0.idle_w", "nope.x", ""]
)


@FUZZ
@given(
    doc=scenarios(max_ops=3),
    section=st.fixed_dictionaries(
        {},
        optional={
            "design": st.one_of(st.sampled_from(["grid", "zip", "random", "lhs"]), HOSTILE_VALUES),
            "samples": HOSTILE_VALUES,
            "replicates": HOSTILE_VALUES,
            "parameters": st.one_of(
                HOSTILE_VALUES,
                st.dictionaries(
                    SWEEP_PATHS,
                    st.one_of(
                        HOSTILE_VALUES,
                        st.lists(HOSTILE_VALUES, max_size=3),
                        st.fixed_dictionaries(
                            {"start": HOSTILE_VALUES, "stop": HOSTILE_VALUES},
                            optional={"num": HOSTILE_VALUES, "step": HOSTILE_VALUES},
                        ),
                        # valid ranges: small ones, or ones too large to run (refused
                        # up front); none in between, which would only take long
                        st.fixed_dictionaries(
                            {"start": st.integers(0, 5), "stop": st.integers(6, 20)},
                            optional={"step": st.just(1)},
                        ),
                        st.fixed_dictionaries(
                            {
                                "start": st.integers(0, 5),
                                "stop": st.integers(6, 10**9),
                                "num": st.integers(MAX_SWEEP_RUNS + 1, 10**12),
                            }
                        ),
                    ),
                    max_size=2,
                ),
            ),
            "executor": st.one_of(st.just({"name": "serial"}), HOSTILE_VALUES),
        },
    ),
)
def test_hostile_sweep_sections_prepare_or_are_named(tmp_path_factory, doc, section):
    from simulator.sweep.runner import prepare_sweep

    doc["sweep"] = section
    path = _write(tmp_path_factory.mktemp("sweep"), doc)
    with time_bound():
        try:
            prepared = prepare_sweep(path)
        except ScenarioError as exc:
            assert exc.problems and all(p.message for p in exc.problems)
            return
    assert len(prepared.tasks) >= 1


@FUZZ
@given(text=st.text(max_size=40))
def test_set_options_parse_or_are_named(text):
    """``socsim sweep --set PATH=VALUES`` with any text (found: '@', unclosed quotes and
    control characters made PyYAML's errors escape)."""
    from simulator.sweep.cli import parse_set

    try:
        path, values = parse_set(text)
    except ScenarioError as exc:
        assert exc.problems[0].message
        return
    assert (path and text.startswith(path)) or text.strip().startswith(path)
    assert isinstance(values, (list, dict))


@FUZZ
@given(
    name=st.sampled_from(["mobilenet_v1", "mobilenet_v2", "resnet18", "vgg16", "alexnet"]),
    options=st.dictionaries(
        st.sampled_from(["resolution", "num_classes", "width_multiplier"]),
        HOSTILE_VALUES,
        max_size=2,
    ),
)
def test_zoo_options_load_or_are_named(small_soc, name, options):
    """Found: resolution: 1.5e177 overflowed a float inside the layer builder."""
    from simulator.spec import parse_scenario

    doc = copy.deepcopy(small_soc)
    doc["models"] = {"m": {"zoo": name, "options": options}}
    doc["workload"][0]["model"] = "m"
    doc["placement"] = {"policy": "single", "unit": "cpu"}
    with time_bound():
        try:
            parse_scenario(doc)
        except ScenarioError as exc:
            assert all(p.path.startswith("models.m") for p in exc.problems), exc.problems


def test_the_loader_is_a_safe_loader_and_constructs_no_object(tmp_path):
    from simulator.spec.yamlloaders import FAST_LOADER, _PureLoader

    for loader in (_PureLoader, FAST_LOADER):  # FAST_LOADER: None without libyaml
        if loader is None:
            continue
        assert issubclass(loader, yaml.constructor.SafeConstructor)
        assert not issubclass(loader, yaml.constructor.FullConstructor)
        assert not any("python" in (tag or "") for tag in loader.yaml_constructors)
        assert not loader.yaml_multi_constructors
    marker = tmp_path / "constructed"
    path = tmp_path / "evil.yaml"
    path.write_text(f"name: !!python/object/apply:pathlib.Path.touch [{str(marker)!r}]\n")
    scenario, problems = load_or_problems(path)
    assert scenario is None and "could not determine a constructor" in problems[0].message
    assert not marker.exists()
