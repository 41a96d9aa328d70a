"""A default is written in its key's YAML unit and reaches SI like a value the user wrote.

Found in session 8: ``adaptive.stale_ms``'s default (10,000 ms, as the reference table
shows it) reached the engine as ``stale_s = 10000`` (s) when the key was left out, while
the governors' ``window_ms`` default was written in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.hardware.governors import DEFAULT_WINDOW_MS, _window_field
from simulator.schema import Field, Number
from simulator.spec import parse_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_a_scaled_default_is_converted_like_a_written_value():
    field = Field(Number("ms", scale=1e-3, gt=0), default=250.0, to="x_s")
    assert field.default_si() == 0.25
    # zero keeps its type (exact int arithmetic downstream); inf and None stay
    assert Field(Number("ms", scale=1e-3), default=0).default_si() == 0
    assert isinstance(Field(Number("ms", scale=1e-3), default=0).default_si(), int)
    assert Field(Number("ms", scale=1e-3), default=float("inf")).default_si() == float("inf")
    assert Field(Number("ms", scale=1e-3), default=None).default_si() is None
    assert _window_field().default_si() == pytest.approx(DEFAULT_WINDOW_MS * 1e-3)


def test_adaptive_stale_default_is_ten_seconds():
    path = ROOT / "scenarios/examples/adaptive_offload.yaml"
    document = yaml.safe_load(path.read_text())
    entry = next(e for e in document["workload"] if "adaptive" in e)
    written = parse_scenario(document, base_dir=path.parent, source=str(path))
    entry["adaptive"].pop("stale_ms")
    defaulted = parse_scenario(document, base_dir=path.parent, source=str(path))
    stale = [e.adaptive.stale_s for e in defaulted.workload if e.adaptive is not None]
    assert stale == [10.0]  # 10,000 ms, the documented default
    assert [e.adaptive.stale_s for e in written.workload if e.adaptive is not None] == [10.0]
