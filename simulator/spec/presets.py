"""Includes and presets: library files found, presets merged field by field into a document."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import ScenarioError, SocsimError
from simulator.schema import INVALID, Context, Loc, nearest
from simulator.spec.definitions import LIBRARY
from simulator.spec.library import resolve_include
from simulator.spec.paths import user_dirs
from simulator.spec.yamlio import YamlMap, load_yaml_file

PRESET_SECTIONS = ("nodes", "links")


# -- includes and presets -----------------------------------------------------------------
@dataclass
class Presets:
    """Presets found in a document and its includes.

    ``by_section[section][name]`` is ``(body, origin file, Loc of the definition)``;
    ``broken`` is true when some include could not be read (its presets are unknown).
    """

    by_section: dict[str, dict[str, tuple[Any, str, Loc]]] = field(
        default_factory=lambda: {s: {} for s in PRESET_SECTIONS}
    )
    broken: bool = False


def _log_include(path: Path, source: str, presets: Presets) -> None:
    """``socsim -v``: which preset file was loaded (``-vv``: and which presets it gave)."""
    log = logging.getLogger("socsim.spec")
    if log.isEnabledFor(logging.INFO):
        names = [(s, n) for s in PRESET_SECTIONS for n in presets.by_section[s]]
        log.info("loaded preset file %s (included by %s): %d preset(s)", path, source, len(names))
        for section, name in names:
            log.debug("  preset %s.%s from %s", section, name, presets.by_section[section][name][1])


def collect_presets(
    document: Mapping, base_dir: Path, source: str, ctx: Context, seen: tuple
) -> Presets:
    """Presets by section and name: the document's own ``presets:`` and its includes'.

    A name defined in two files is a problem, an include cycle too.
    """
    found = Presets()

    def add(section: str, name: str, entry: tuple[Any, str, Loc], loc: Loc) -> None:
        known = found.by_section[section]
        if name in known and known[name][1] != entry[1]:
            ctx.problem(loc, f"preset '{name}' is also defined in {known[name][1]}")
            return
        known[name] = entry

    presets = document.get("presets")
    if isinstance(presets, Mapping):
        for section in PRESET_SECTIONS:
            entries = presets.get(section)
            if isinstance(entries, Mapping):
                base = Loc("presets").child(presets, section)
                for name, body in entries.items():
                    where = base.child(entries, name)
                    add(section, name, (body, source, where), where)
    includes = document.get("include") or []
    if not isinstance(includes, list):
        return found  # the schema reports the wrong type
    for i, rel in enumerate(includes):
        loc = Loc(f"include[{i}]", includes, i)
        if not isinstance(rel, str):
            continue
        try:
            path = resolve_include(rel, base_dir, user_dirs(ctx))
        except SocsimError as exc:
            ctx.problem(loc, str(exc))
            found.broken = True
            continue
        if path in seen:
            ctx.problem(loc, f"include cycle: '{rel}' is already being included")
            found.broken = True
            continue
        try:
            library = load_yaml_file(path, user_dirs(ctx))
        except ScenarioError as exc:
            for problem in exc.problems:
                if problem.message == "file not found":
                    ctx.problem(loc, f"included file not found: {path}")
                else:
                    ctx.problems.append(problem)
            found.broken = True
            continue
        lib_ctx = Context(default_file=str(path), allowed_dirs=user_dirs(ctx))
        if LIBRARY.check(library, Loc(""), lib_ctx) is INVALID:
            ctx.problems.extend(lib_ctx.problems)
            found.broken = True
            continue
        nested = collect_presets(library, path.parent, str(path), ctx, (*seen, path))
        _log_include(path, source, nested)
        found.broken = found.broken or nested.broken
        for section in PRESET_SECTIONS:
            for name, entry in nested.by_section[section].items():
                add(section, name, entry, loc)
    return found


#: keys that select an implementation from a registry (``governor.name``, ``radio.model``,
#: ``placement.policy``, ``arrival.process``, ``*.dist``): the other keys of such a block
#: belong to the implementation, so an override that changes it replaces the whole block
TAG_KEYS = ("name", "model", "policy", "process", "dist")


def _retagged(base: Mapping, override: Mapping) -> bool:
    return any(k in base and k in override and base[k] != override[k] for k in TAG_KEYS)


def _merge(base: Any, override: Any) -> Any:
    """Deep merge: mappings merge key by key (``null`` removes a key), the rest replaces.

    A mapping whose tag key (:data:`TAG_KEYS`) the override changes is replaced, not
    merged: the preset's options of the old implementation do not apply to the new one.
    """
    if not (isinstance(base, Mapping) and isinstance(override, Mapping)):
        return copy.deepcopy(override)
    if _retagged(base, override):
        return copy.deepcopy(override)
    merged = YamlMap(mark=getattr(override, "mark", None) or getattr(base, "mark", None))
    for key, value in base.items():
        merged[key] = copy.deepcopy(value)
        if isinstance(base, YamlMap) and key in base.key_marks:
            merged.key_marks[key] = base.key_marks[key]
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
            continue
        merged[key] = _merge(merged[key], value) if key in merged else copy.deepcopy(value)
        if isinstance(override, YamlMap) and key in override.key_marks:
            merged.key_marks[key] = override.key_marks[key]
    return merged


def _with_out(mapping: Mapping, key: str) -> YamlMap:
    """A copy of ``mapping`` (marks kept) without ``key``."""
    out = YamlMap(
        {k: v for k, v in mapping.items() if k != key}, mark=getattr(mapping, "mark", None)
    )
    out.key_marks.update(getattr(mapping, "key_marks", {}))
    return out


def with_key(mapping: Mapping, key: str, value: Any) -> YamlMap:
    out = YamlMap(mapping, mark=getattr(mapping, "mark", None))
    out.key_marks.update(getattr(mapping, "key_marks", {}))
    out[key] = value
    return out


def expand_presets(document: Mapping, presets: Presets, ctx: Context) -> tuple[YamlMap, set[str]]:
    """The document with every ``preset:`` reference replaced by the merged preset.

    Also returns the YAML paths of the entries whose preset is unknown.
    """
    failed: set[str] = set()
    expanded = YamlMap(document, mark=getattr(document, "mark", None))
    expanded.key_marks.update(getattr(document, "key_marks", {}))
    for section in PRESET_SECTIONS:
        entries = document.get(section)
        if not isinstance(entries, Mapping):
            continue
        new_entries = YamlMap(entries, mark=getattr(entries, "mark", None))
        new_entries.key_marks.update(getattr(entries, "key_marks", {}))
        for name, body in entries.items():
            if not isinstance(body, Mapping) or "preset" not in body:
                continue
            loc = Loc(section).child(entries, name).child(body, "preset")
            preset_name = body["preset"]
            available = presets.by_section[section]
            if not isinstance(preset_name, str) or not preset_name:
                ctx.problem(
                    loc, f"expected the name of a {section[:-1]} preset, got {preset_name!r}"
                )
                failed.add(f"{section}.{name}")
                new_entries[name] = _with_out(body, "preset")
                continue
            if preset_name not in available:
                where = ", ".join(available) or "none (add an include: of a library file)"
                if not presets.broken:  # else an include failed: that is the problem
                    ctx.problem(
                        loc,
                        f"unknown {section[:-1]} preset '{preset_name}'; available: {where}",
                        nearest(str(preset_name), available),
                    )
                failed.add(f"{section}.{name}")
                new_entries[name] = _with_out(body, "preset")
                continue
            new_entries[name] = _merge(available[preset_name][0], _with_out(body, "preset"))
        expanded[section] = new_entries
    return expanded, failed
