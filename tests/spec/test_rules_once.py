"""Each rule of an app is written once (simulator/rules.py, issue 17 item 1) and fires
the same from YAML and from Python: the loader's problem and the dataclass's RuleError
carry the same message, the same YAML path and the same nearest valid choice."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.placement.base import PlacementSpec
from simulator.rules import RuleError
from simulator.scheduling import AdaptiveOptions
from simulator.workload import WorkloadEntry

SINGLE = PlacementSpec("single", {"unit": "cpu"})
SECOND_APP = (
    "  - app: camera\n    model: net\n    source: phone\n"
    "    arrival: {process: poisson, rate_hz: 2}\n    count: 1\n"
)


def _path(keys) -> str:
    text = ""
    for key in keys:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def _yaml_and_python(spec, rule: str):
    """(the YAML problem, a zero-argument Python construction) breaking ``rule``."""
    base = spec.load(spec.BASE)
    entry = base.workload[0]
    replace = dataclasses.replace
    if rule == "unique":
        text = spec.edit(spec.BASE, "placement: {policy", SECOND_APP + "placement: {policy")
        return spec.problem(text), lambda: replace(base, workload=(entry, entry))
    if rule == "model":
        text = spec.edit(spec.BASE, "model: net", "model: nett")
        return spec.problem(text), lambda: replace(base, workload=(replace(entry, model="nett"),))
    if rule == "source":
        text = spec.edit(spec.BASE, "source: phone", "source: phnoe")
        return spec.problem(text), lambda: replace(base, workload=(replace(entry, source="phnoe"),))
    if rule == "placement":
        text = spec.edit(spec.BASE, "placement: {policy: single, unit: cpu}\n", "")
        return spec.problem(text), lambda: replace(base, placement=None)
    if rule == "bounded":
        text = spec.edit(spec.BASE, "    count: 3\n", "")
        return spec.problem(text), lambda: replace(entry, count=None)
    entry_args = ("camera", "net", "phone", "periodic", {"period_s": 0.1, "offset_s": 0.0})
    if rule == "adaptive_options":
        text = spec.edit(spec.BASE, "    deadline_ms: 400\n", "    adaptive: {ewma_alpha: 0.5}\n")
        return spec.problem(text), lambda: WorkloadEntry(
            *entry_args, count=3, adaptive=AdaptiveOptions(ewma_alpha=0.5)
        )
    if rule == "adaptive_replicas":
        text = spec.edit(
            spec.BASE,
            "    deadline_ms: 400\n",
            "    dispatch: adaptive\n    replicas: [{policy: single, unit: cpu}]\n",
        )
        return spec.problem(text), lambda: WorkloadEntry(
            *entry_args, count=3, dispatch="adaptive", replicas=(SINGLE,)
        )
    assert rule == "xor"
    text = spec.edit(
        spec.BASE,
        "    deadline_ms: 400\n",
        "    deadline_ms: 400\n    placement: {policy: single, unit: gpu}\n"
        "    replicas: [{policy: single, unit: cpu}, {policy: single, unit: gpu}]\n",
    )
    return spec.problem(text), lambda: WorkloadEntry(
        "camera", "net", "phone", "periodic", {"period_s": 0.1, "offset_s": 0.0}, count=3,
        placement=SINGLE, replicas=(SINGLE, SINGLE),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "path", "message", "suggestion"),
    [
        ("unique", "workload[1].app", "app name 'camera' already used by workload[0]", None),
        ("model", "workload[0].model", "unknown model 'nett'; models: net", "net"),
        ("source", "workload[0].source", "unknown node 'phnoe'; nodes: phone, cloud", "phone"),
        ("placement", "workload[0]", "no placement: give 'placement:' here", None),
        ("bounded", "workload[0]", "open-ended arrivals: give count or duration_s", None),
        ("xor", "workload[0]", "give either 'placement' or 'replicas', not both", None),
        ("adaptive_options", "workload[0].adaptive", "'adaptive' options need 'dispatch: ad", None),
        ("adaptive_replicas", "workload[0].dispatch", "dispatch 'adaptive' chooses among", None),
    ],
)  # fmt: skip
def test_rule_fires_from_yaml_and_from_python(spec, rule, path, message, suggestion):
    problem, build = _yaml_and_python(spec, rule)
    assert problem.path == path
    assert problem.message.startswith(message)
    assert problem.suggestion == suggestion
    assert problem.file == str(spec.root / "scenario.yaml") and problem.line is not None
    with pytest.raises(RuleError) as caught:
        build()
    error = caught.value
    assert error.message == problem.message  # one text, written once
    assert error.suggestion == suggestion
    # the dataclass's path is relative to what it checks: a WorkloadEntry's to the entry
    assert path.endswith(_path(error.path))
    if suggestion:
        assert f"(did you mean '{suggestion}'?)" in str(error)
    assert str(error).startswith("app 'camera': ") or rule == "unique"


def test_rule_error_pickles_with_its_fields():
    import pickle

    error = RuleError("unknown model 'nett'; models: net", ("model",), "nett", ["net"], "app 'a'")
    back = pickle.loads(pickle.dumps(error))
    assert (back.message, back.path, back.value, back.choices, back.subject) == (
        error.message,
        ("model",),
        "nett",
        ("net",),
        "app 'a'",
    )
    assert (
        str(back)
        == str(error)
        == ("app 'a': unknown model 'nett'; models: net (did you mean 'net'?)")
    )


def test_link_ends_rule_fires_from_yaml_and_from_python(spec):
    from simulator.network.topology import Link, Network

    problem = spec.problem(spec.edit(spec.BASE, "ends: [phone, cloud]", "ends: [phone, clud]"))
    assert problem.path == "links.uplink.ends[1]"
    assert problem.message == "unknown node 'clud'; nodes: phone, cloud"
    assert problem.suggestion == "cloud" and problem.line is not None
    with pytest.raises(RuleError) as caught:
        Network(["phone", "cloud"], [Link("uplink", "phone", "clud", 0.02, 5.85e6, 13e6)])
    error = caught.value
    assert error.message == problem.message and error.path == ("ends", 1)
    assert str(error) == (
        "link 'uplink': unknown node 'clud'; nodes: phone, cloud (did you mean 'cloud'?)"
    )
