"""Output locations checked before any work is done, so a bad ``-o`` costs nothing.

A run or a sweep can take minutes; finding that ``-o`` names a file, a read-only folder
or a path under a file only when writing would lose the results. These checks run
first and raise :class:`~simulator.errors.OutputError` (exit status 1, nothing
simulated). Writability is probed by creating and removing an empty temporary folder,
which also holds for root (for whom ``os.access`` says yes to a read-only mount).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from simulator.errors import OutputError


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (``.`` at worst)."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(".")


def _probe(folder: Path, what: str) -> None:
    probe = folder / f".socsim-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise OutputError(
            f"cannot write {what}: {folder} is not writable ({exc.strerror or exc})"
        ) from None


def check_output_dir(
    path: str | Path, what: str = "the output folder", *, for_file: str | None = None
) -> Path:
    """Check that ``path`` is, or can become, a writable folder; return it.

    Nothing is created (the folder is made when the results are written). ``for_file``:
    the file (as "WHAT PATH") that will be written in it, which the messages then name.

    Raises
    ------
    OutputError
        When ``path`` is a file, lies under a file, or cannot be written.
    """
    path = Path(path)
    subject = for_file or f"{what} {path}"
    existing = _nearest_existing(path)
    if not existing.is_dir():
        kind = "is a file" if existing.exists() else "is a broken link"
        if existing == path and for_file is None:
            raise OutputError(f"{what} {path} {kind}, not a folder; give another -o")
        again = "another path" if for_file else "another -o"
        raise OutputError(f"cannot create {subject}: {existing} {kind}; give {again}")
    _probe(existing, subject)
    return path


def check_output_file(path: str | Path, what: str = "the output file") -> Path:
    """Check that the file ``path`` can be written (replaced if it exists); return it.

    Raises
    ------
    OutputError
        When ``path`` is a folder, or its folder cannot be created or written.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{what} {path} is a folder, not a file; give another path")
    check_output_dir(path.parent, for_file=f"{what} {path}")
    return path
