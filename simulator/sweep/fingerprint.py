"""What a sweep's rows depend on, hashed: the resolved scenario, the files it names, the
sweep's design and every flag that changes rows.

A sweep folder records these parts in ``sweep.json``; a resume whose parts differ is
refused (:mod:`simulator.sweep.store`) and the message names what differs. The executor,
its workers, ``--allow-dir`` and ``--allow-plugin`` are left out: they do not change a row
(every task carries its seed; a file or module not allowed stops the sweep before it runs).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from simulator.errors import SocsimError
from simulator.schema import mark_of
from simulator.spec.paths import allowed_dirs, resolve_user_path
from simulator.spec.yamlio import plain
from simulator.sweep.design import SweepSpec

#: sweep.json's format of the parts; a folder written with another is not resumed.
#: 2: rows carry accuracy_top1, peak_memory_bytes and flexibility after the summary;
#: 3: and the load figures after them (simulator.results.fleets.LOAD_KEYS);
#: 4: the same columns, computed differently (:data:`CHANGES`).
PARTS_VERSION = 4

#: What rows written before each parts version lack or compute otherwise, in words.
CHANGES: Mapping[int, str] = MappingProxyType(
    {
        2: "sweep rows carried accuracy_top1, peak_memory_bytes and flexibility",
        3: "sweep rows carried the load figures (airtime_utilisation, edge_utilisation, ...: "
        "docs/sweeps.md)",
        4: "a reshape view owned no activation memory (peak_memory_bytes) and imported "
        "non-square convolutions were costed by a unit's learned predictor",
    }
)


def digest(data: bytes | str) -> str:
    """A short content hash (the first 16 hex digits of SHA-256)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:16]


def canonical(value: Any) -> str:
    """JSON text of ``value`` with mapping order kept (an order can change a run)."""
    return json.dumps(plain(value), separators=(",", ":"), allow_nan=True, default=repr)


def names_file(key: Any) -> bool:
    """Does a scenario key hold a file path (ONNX models, traces, predictors)?"""
    return isinstance(key, str) and (
        key == "onnx" or key.endswith(("_file", "_path")) or key.startswith("predictor")
    )


def _file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    return sha.hexdigest()[:16]


def named_files(
    document: Any, base_dir: Path, allowed: tuple[Path, ...], found: dict[str, str]
) -> dict[str, str]:
    """``{resolved path: content hash}`` of every file the document names (see
    :func:`names_file`), each resolved from the file that names it."""
    items = document.items() if isinstance(document, Mapping) else enumerate(document)
    for key, value in items:
        if isinstance(value, (Mapping, list)):
            named_files(value, base_dir, allowed, found)
        elif isinstance(value, str) and value and names_file(key):
            mark = mark_of(document, key)
            folder = Path(mark.file).parent if mark is not None and mark.file else base_dir
            try:
                path = resolve_user_path(value, folder, allowed)
            except SocsimError:
                continue  # validation reports it (or the key is no file after all)
            if path.is_file():
                found[str(path)] = _file_digest(path)
    return found


def fingerprint_parts(
    expanded: Mapping,
    spec: SweepSpec,
    base_dir: str | Path,
    allow_dirs: Sequence[str | Path] = (),
) -> dict[str, Any]:
    """The parts of a sweep's fingerprint, each comparable on its own.

    Parameters
    ----------
    expanded : mapping
        The scenario document with includes and presets expanded (without ``sweep:``).
    spec : SweepSpec
        The sweep as run (section and command-line flags together).
    base_dir : str or Path
        The scenario file's folder.
    allow_dirs : sequence
        As for the scenario loader.
    """
    base = Path(base_dir)
    allowed = allowed_dirs(base, allow_dirs)
    files = named_files(expanded, base, allowed, {})
    for parameter in spec.parameters:  # a swept file name: every file listed
        key = parameter.path.rsplit(".", 1)[-1]
        for value in parameter.values or () if names_file(key) else ():
            named_files({key: value}, base, allowed, files)
    parameters = [
        [p.path, None if p.values is None else list(p.values), p.low, p.high, p.log]
        for p in spec.parameters
    ]
    return {
        "version": PARTS_VERSION,
        "scenario": digest(canonical(expanded)),
        "files": dict(sorted(files.items())),
        "parameters": digest(canonical(parameters)),
        "design": spec.design,
        "samples": spec.samples,
        "replicates": spec.replicates,
        "fast": spec.fast,
        # only when given: the fingerprints of sweeps without samples stay as they were
        **({"mc_samples": spec.mc_samples} if spec.mc_samples else {}),
    }


def fingerprint(parts: Mapping[str, Any]) -> str:
    """One hash of every part."""
    return digest(canonical(dict(parts)))


_LABELS = {
    "scenario": "the scenario (after includes and presets) was edited",
    "parameters": "the swept paths or values (sweep.parameters, --set) changed",
    "version": "the folder was written by another socsim version",
}


def differences(old: Any, new: Mapping[str, Any]) -> list[str]:
    """What differs between the parts recorded in a folder and this sweep's, in words."""
    version = old.get("version") if isinstance(old, Mapping) else None
    if isinstance(version, int) and 1 <= version < new["version"]:
        changes = [CHANGES[v] for v in range(version + 1, new["version"] + 1)]
        return [
            f"its rows were written before {'; before '.join(changes)}; a table never mixes the two"
        ]
    if not isinstance(old, Mapping) or old.get("version") != new["version"]:
        return [_LABELS["version"] + " (its fingerprint covers other things)"]
    out = [_LABELS[key] for key in ("scenario", "parameters") if old.get(key) != new[key]]
    flags = {
        "design": "--design",
        "samples": "--samples",
        "replicates": "--replicates",
        "mc_samples": "--mc-samples",
    }
    for key, flag in flags.items():
        if old.get(key) != new.get(key):
            out.append(f"{flag}: {old.get(key)} before, {new.get(key)} now")
    if old.get("fast") != new["fast"]:
        out.append(
            f"--fast: {'on' if old.get('fast') else 'off'} before, "
            f"{'on' if new['fast'] else 'off'} now"
        )
    before, now = old.get("files") or {}, new["files"]
    for path in sorted(set(before) | set(now)):
        if path not in now:
            out.append(f"{path} is no longer used")
        elif path not in before:
            out.append(f"{path} is newly used")
        elif before[path] != now[path]:
            out.append(f"{path} changed")
    return out or ["the fingerprint differs"]
