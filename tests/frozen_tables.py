"""Digests of every shipped scenario's result tables, frozen in ``engine/data/tables_frozen.json``.

The fixture was written by the engine *before* issue 17's rewrite (components, columnar
trace storage, cached costs; commit 37aca07), so ``engine/test_tables_frozen.py`` proves
the new engine produces the same tables bit for bit: every table of every shipped example
and sweep base scenario, at ``trace="full"``, replicate 0, hashed from its CSV text
(floats written with ``repr``, so one ulp changes the digest) together with its column
names and dtypes.

Regenerate only on purpose, when a result is meant to change (say which change in the
commit), with ``python tests/frozen_tables.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "engine" / "data" / "tables_frozen.json"
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from simulator.engine import simulate  # noqa: E402
from simulator.spec import load_scenario  # noqa: E402


def scenario_files() -> list[Path]:
    return sorted(
        p for folder in ("examples", "sweeps") for p in (ROOT / "scenarios" / folder).glob("*.yaml")
    )


def table_digest(frame: pd.DataFrame) -> str:
    """sha256 of a table's columns, dtypes and CSV text (floats via ``repr``)."""
    head = "|".join(f"{name}:{dtype}" for name, dtype in frame.dtypes.items())
    text = frame.to_csv(index=False, float_format=None, lineterminator="\n")
    return hashlib.sha256((head + "\n" + text).encode()).hexdigest()


def digests(path: Path) -> dict[str, str]:
    """``{table name: digest}`` of one scenario's run (every DataFrame of the result)."""
    result = simulate(load_scenario(path), replicate=0, trace="full")
    out = {}
    for name in sorted(vars(result)):
        value = getattr(result, name)
        if isinstance(value, pd.DataFrame):
            out[name] = table_digest(value)
        elif name == "summary":
            out[name] = hashlib.sha256(
                json.dumps(value, sort_keys=True, default=repr).encode()
            ).hexdigest()
    return out


def all_digests() -> dict[str, dict[str, str]]:
    return {p.relative_to(ROOT / "scenarios").as_posix(): digests(p) for p in scenario_files()}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/frozen_tables.py --write")
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(all_digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
