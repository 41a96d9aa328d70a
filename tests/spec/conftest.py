"""Helpers for the scenario-loading tests: a small YAML scenario and ways to load it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.errors import Problem, ScenarioError
from simulator.spec import Scenario, load_scenario

REPO = Path(__file__).resolve().parents[2]

#: A valid scenario. Tests change it with ``spec.edit`` (which insists the text it
#: replaces is there exactly once) and find lines with ``spec.line_of``.
BASE = """\
name: base
seed: 3
nodes:
  phone:
    role: device
    sync_us: 50
    shared_memory_bandwidth_gb_s: 2
    units:
      cpu: {kind: cpu, cores: 4, peak_gflops: {fp32: 10}, dispatch_us: 5, active_w: 2}
      gpu:
        kind: gpu
        peak_gflops: {fp32: 100, fp16: 200}
        memory_bandwidth_gb_s: 20
        memory_mb: 2000
  cloud:
    role: cloud
    units:
      gpu: {kind: gpu, peak_gflops: {fp32: 1000}}
links:
  uplink: {ends: [phone, cloud], latency_ms: 20, bandwidth_mbps: 5.85, reverse_bandwidth_mbps: 13}
models:
  net: {zoo: alexnet}
workload:
  - app: camera
    model: net
    source: phone
    arrival: {process: periodic, period_ms: 100}
    count: 3
    deadline_ms: 400
placement: {policy: single, unit: cpu}
"""


class SpecHelper:
    """Write, load and inspect small scenarios under one temporary directory."""

    BASE = BASE
    REPO = REPO

    def __init__(self, root: Path):
        self.root = root

    @staticmethod
    def edit(text: str, old: str, new: str) -> str:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
        return text.replace(old, new)

    @staticmethod
    def line_of(text: str, needle: str, nth: int = 1) -> int:
        """1-based line of the ``nth`` line of ``text`` containing ``needle``."""
        hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
        assert len(hits) >= nth, f"{needle!r} not found {nth} time(s)"
        return hits[nth - 1]

    def write(self, text: str | bytes, name: str = "scenario.yaml") -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def load(self, text: str, name: str = "scenario.yaml") -> Scenario:
        return load_scenario(self.write(text, name))

    def problems(self, text: str | bytes, name: str = "scenario.yaml") -> tuple[Problem, ...]:
        path = self.write(text, name)
        with pytest.raises(ScenarioError) as info:
            load_scenario(path)
        return info.value.problems

    def problem(self, text: str | bytes, name: str = "scenario.yaml") -> Problem:
        """The single problem of ``text`` (fails when there are none or several)."""
        found = self.problems(text, name)
        assert len(found) == 1, "\n".join(str(p) for p in found)
        return found[0]


@pytest.fixture
def spec(tmp_path) -> SpecHelper:
    return SpecHelper(tmp_path)
