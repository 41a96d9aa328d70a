"""Type checking: mypy (configured in setup.cfg) over the whole package, once.

The public API (``simulator/__init__``, ``simulator/spec``, ``simulator/results``,
``analysis``) has no error; the whole package has exactly the count committed in
tests/data/mypy_baseline.txt: more is a regression, fewer means errors were fixed and
the baseline must come down with them (a ratchet). mypy's cache (``.mypy_cache``) makes
a second run take 0.2 s of CPU (0.7 s wall); a cold run (fresh checkout) takes 7.5-13 s
of CPU: 11-16 s wall at a load average of about 4 on the shared 2-core machine, 70 s at
8 (measured 2026-12-03, 19:00-19:39 UTC), so the check stays in the default suite.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "tests" / "data" / "mypy_baseline.txt"
#: The public API: files under these paths must type-check without error.
STRICT = ("simulator/__init__.py", "simulator/spec/", "simulator/results/", "analysis/")
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error: ")


@pytest.fixture(scope="module")
def errors() -> list[str]:
    """mypy's error lines over the package (its notes left out)."""
    pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e .[test]")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "setup.cfg", "--no-pretty"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        pytest.fail(f"mypy did not run (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return [line for line in done.stdout.splitlines() if _ERROR.match(line)]


def _path(line: str) -> str:
    match = _ERROR.match(line)
    assert match is not None
    return match["path"].replace("\\", "/")


def test_the_public_api_has_no_type_errors(errors):
    strict = [line for line in errors if _path(line).startswith(STRICT)]
    assert not strict, "mypy errors in the public API:\n" + "\n".join(strict)


def test_the_package_error_count_is_the_committed_baseline(errors):
    baseline = int(BASELINE.read_text(encoding="utf-8").split()[0])
    by_file = Counter(_path(line) for line in errors)
    worst = ", ".join(f"{path} {n}" for path, n in by_file.most_common(5))
    assert len(errors) <= baseline, (
        f"{len(errors)} mypy errors, more than the baseline {baseline} "
        f"({BASELINE.relative_to(REPO)}); most in: {worst}"
    )
    assert len(errors) == baseline, (
        f"{len(errors)} mypy errors, fewer than the baseline {baseline}: write "
        f"{len(errors)} in {BASELINE.relative_to(REPO)} so the count cannot grow back"
    )
