"""Where results land by default: ``runs/<name>...``, and the rule a scenario name obeys.

A scenario's ``name:`` comes from a file that may be someone else's; it names the
default output folder, so it must never choose a place outside ``runs/``. The rule is
checked twice: at load (:func:`name_problem`, a :class:`~simulator.errors.ScenarioError`
naming ``name``) and again when a default folder is built (:func:`default_output_dir`),
so a scenario built in Python without the loader cannot escape either.
"""

from __future__ import annotations

import re
from pathlib import Path

from simulator.errors import OutputError

RUNS_DIR = Path("runs")
MAX_NAME_CHARS = 100
_OTHER = re.compile(r"[^A-Za-z0-9_.-]")
NAME_RULE = (
    f"ASCII letters, digits, '_', '-' and '.', at most {MAX_NAME_CHARS} characters, "
    "no leading '.' and no '..'"
)


def name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a folder name under ``runs/`` (None: nothing)."""
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters long"
    if not name:
        return "is empty"
    others = sorted(set(_OTHER.findall(name)))
    if others:
        return "contains " + " ".join(repr(c) for c in others[:5])
    if name.startswith("."):
        return "starts with '.'"
    if ".." in name:
        return "contains '..'"
    return None


def suggest_slug(name: str) -> str:
    """A safe name close to ``name``: other characters become ``_``, dots are not leading
    or doubled, cut to the length limit (``'../../x'`` -> ``'x'``)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    slug = re.sub(r"\.{2,}", ".", slug).strip("._")
    return slug[:MAX_NAME_CHARS].rstrip(".") or "scenario"


def default_output_dir(name: str, suffix: str = "", *parts: str) -> Path:
    """``runs/<name><suffix>/<parts...>``, the default output folder of a command.

    Parameters
    ----------
    name : str
        The scenario name.
    suffix : str
        Appended to the name (``"_sweep"``).
    *parts : str
        Sub-folders (``"score"``).

    Raises
    ------
    OutputError
        When ``name`` breaks :data:`NAME_RULE` or the folder would not lie inside
        ``runs/`` (defence in depth: the loader already refuses such names).
    """
    problem = name_problem(name)
    if problem is not None:
        raise OutputError(
            f"scenario name '{name}' {problem}: a name is {NAME_RULE}; "
            f"rename it (e.g. '{suggest_slug(name)}') or give -o"
        )
    folder = RUNS_DIR.joinpath(name + suffix, *parts)
    runs = RUNS_DIR.resolve()
    if not folder.resolve().is_relative_to(runs):
        raise OutputError(f"the default output folder {folder} would leave {runs}; give -o")
    return folder
