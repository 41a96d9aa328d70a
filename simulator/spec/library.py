"""The shipped library by name: presets found from any directory, installed or not.

The library is the ``scenarios/`` folder (:func:`simulator.spec.paths.shipped_library_dir`:
beside the package in a checkout, inside it in an installed wheel). Its preset files are
the ``*.yaml`` of :data:`PRESET_FOLDERS`; a scenario anywhere includes the file that
defines a preset with ``include: [preset:NAME]`` instead of a relative path, and
``socsim presets [NAME]`` lists them or prints one. A ``preset:`` include is resolved
and read under the same rule as any include (docs/security.md): the library is an
allowed directory, and nothing outside it is reached by name.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import SocsimError
from simulator.schema import nearest
from simulator.spec.paths import resolve_user_path, shipped_library_dir

#: an include naming a shipped preset rather than a file: ``preset:flagship_phone``
PRESET_PREFIX = "preset:"
#: the library folders whose files define presets (``presets: {nodes: ..., links: ...}``)
PRESET_FOLDERS = ("devices", "networks")
_SECTIONS = ("nodes", "links")


@dataclass(frozen=True)
class PresetEntry:
    """One shipped preset.

    Attributes
    ----------
    name : str
        What ``preset:`` names (in ``nodes:`` / ``links:`` and in ``include:``).
    section : str
        ``nodes`` or ``links``.
    path : Path
        The library file that defines it.
    line : int
        The 1-based line of its name in that file.
    """

    name: str
    section: str
    path: Path
    line: int

    @property
    def relative(self) -> str:
        """The file relative to the library (``devices/flagship_phone.yaml``)."""
        library = shipped_library_dir()
        return self.path.relative_to(library).as_posix() if library else str(self.path)


@functools.lru_cache(maxsize=1)
def shipped_presets() -> dict[str, PresetEntry]:
    """Every preset the shipped library defines, by name (sorted).

    Raises
    ------
    ScenarioError
        When a library file cannot be read (a damaged install).
    """
    from simulator.spec.yamlio import load_yaml_file

    library = shipped_library_dir()
    if library is None:
        return {}
    found: dict[str, PresetEntry] = {}
    for folder in PRESET_FOLDERS:
        for path in sorted((library / folder).glob("*.yaml")):
            document = load_yaml_file(path, (library,))
            presets = document.get("presets") if isinstance(document, dict) else None
            for section in _SECTIONS:
                entries = (presets or {}).get(section) or {}
                marks = getattr(entries, "key_marks", {})
                for name in entries:
                    mark = marks.get(name)
                    line = mark.line if mark is not None else 1
                    found.setdefault(name, PresetEntry(name, section, path.resolve(), line))
    return dict(sorted(found.items()))


def preset_entry(name: str, what: str = "") -> PresetEntry:
    """The shipped preset ``name``.

    Raises
    ------
    SocsimError
        For an unknown name: the nearest one and how to list them all.
    """
    entries = shipped_presets()
    if name in entries:
        return entries[name]
    guess = nearest(name, entries)
    hint = f" (did you mean '{guess}'?)" if guess else ""
    where = shipped_library_dir() or "(no shipped library is installed)"
    raise SocsimError(
        f"{what}no shipped preset '{name}'{hint}; `socsim presets` lists the "
        f"{len(entries)} in {where}"
    )


def resolve_include(written: str, base_dir: str | Path, allowed: tuple[Path, ...]) -> Path:
    """The file an ``include:`` entry names: ``preset:NAME`` (the shipped library file that
    defines preset ``NAME``) or a path relative to ``base_dir``, checked against
    ``allowed`` either way (:func:`~simulator.spec.paths.resolve_user_path`).

    Raises
    ------
    SocsimError
        An unknown preset name, or a path outside the allowed directories.
    """
    if not written.startswith(PRESET_PREFIX):
        return resolve_user_path(written, base_dir, allowed)
    name = written[len(PRESET_PREFIX) :].strip()
    path = preset_entry(name, f"'{written}': ").path
    return resolve_user_path(str(path), base_dir, allowed)


def preset_text(entry: PresetEntry) -> str:
    """The lines of ``entry``'s definition as written in its file, comments included:
    from its name to the next key at its indentation or less."""
    lines = entry.path.read_text(encoding="utf-8").splitlines()
    first = lines[entry.line - 1]
    indent = len(first) - len(first.lstrip())
    end = entry.line
    while end < len(lines):
        line = lines[end]
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#") and len(line) - len(stripped) <= indent:
            break
        end += 1
    block = lines[entry.line - 1 : end]
    while block and not block[-1].strip():
        block.pop()
    return "\n".join(line[indent:] for line in block)
