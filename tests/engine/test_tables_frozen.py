"""Every shipped scenario's tables are bit-identical to the frozen ones.

``data/tables_frozen.json`` was written by the engine before issue 17's rewrite (see
``tests/frozen_tables.py``); a digest that moves means a result moved. When that is meant
(a fidelity change, say), regenerate the fixture in the same commit and say why.
"""

from __future__ import annotations

import json

import pytest
from frozen_tables import FIXTURE, ROOT, digests, scenario_files

FROZEN = json.loads(FIXTURE.read_text())
FILES = scenario_files()


def test_the_fixture_covers_every_shipped_scenario():
    assert sorted(FROZEN) == sorted(p.relative_to(ROOT / "scenarios").as_posix() for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_tables_are_bit_identical_to_the_frozen_ones(path):
    rel = path.relative_to(ROOT / "scenarios").as_posix()
    now = digests(path)
    moved = sorted(name for name in FROZEN[rel] if now.get(name) != FROZEN[rel][name])
    assert not moved, f"{rel}: tables that changed: {moved}"
    assert sorted(now) == sorted(FROZEN[rel])
