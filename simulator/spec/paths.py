"""The one rule for file paths written in scenario files (includes, bandwidth traces).

A path is relative to the file that names it (absolute paths are taken as written),
symlinks are resolved, and the result must lie inside one of the allowed directories:
the directory of the top-level scenario file, the shipped ``scenarios/`` library, and
any directory the user adds (``--allow-dir DIR``, ``allow_dirs=``). A scenario received
from a colleague can therefore read nothing outside the folders its user allowed, e.g.
not ``include: [/home/me/.ssh/id_rsa]`` nor a trace ``../../../etc/passwd``.
"""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simulator.errors import SocsimError
from simulator.schema import Context, Loc, mark_of


class PathNotAllowedError(SocsimError):
    """A path written in a scenario resolves outside the allowed directories."""

    def __init__(self, written: str, resolved: Path, allowed: tuple[Path, ...]):
        self.written = written
        self.resolved = resolved
        self.allowed = allowed
        dirs = ", ".join(str(d) for d in allowed) or "(none)"
        super().__init__(
            f"'{written}' resolves to {resolved}, outside the allowed directories ({dirs}); "
            "allow its directory with --allow-dir DIR (allow_dirs= in the library)"
        )

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return (type(self), (self.written, self.resolved, self.allowed))


def shipped_library_dir() -> Path | None:
    """The shipped ``scenarios/`` library (presets, examples, models), if present.

    In a source checkout (and an editable install) it is the folder beside the package;
    a wheel carries a copy inside the package, ``simulator/scenarios`` (``setup.py``).
    """
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "scenarios", package.parent / "scenarios"):
        if (folder / "devices").is_dir():
            return folder
    return None


def allowed_dirs(scenario_dir: str | Path, extra: Iterable[str | Path] = ()) -> tuple[Path, ...]:
    """The resolved directories a scenario in ``scenario_dir`` may read files from.

    Parameters
    ----------
    scenario_dir : str or Path
        Directory of the top-level scenario file.
    extra : iterable of str or Path
        Directories the user allows in addition.
    """
    dirs = [Path(scenario_dir), *(Path(d) for d in extra)]
    library = shipped_library_dir()
    if library is not None:
        dirs.append(library)
    return tuple(dict.fromkeys(d.resolve() for d in dirs))


def resolve_user_path(written: str, relative_to: str | Path, allowed: Iterable[Path]) -> Path:
    """Resolve a path written in a scenario file and check it against ``allowed``.

    Parameters
    ----------
    written : str
        The path as written in the file.
    relative_to : str or Path
        Directory of the file that names it.
    allowed : iterable of Path
        Resolved allowed directories (:func:`allowed_dirs`).

    Returns
    -------
    Path
        The resolved path (symlinks followed), inside an allowed directory.

    Raises
    ------
    PathNotAllowedError
        When the resolved path lies outside every allowed directory.
    """
    allowed = tuple(allowed)
    # resolve() follows symlinks first, so a link inside an allowed folder pointing out
    # of it is judged by its target
    try:
        resolved = (Path(relative_to) / written).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # NUL bytes, symlink loops
        raise SocsimError(f"'{written}' is not a usable path: {exc}") from None
    if not any(resolved.is_relative_to(folder) for folder in allowed):
        raise PathNotAllowedError(written, resolved, allowed)
    return resolved


#: ``os.open`` flags of every read of a file a scenario names: never follow a symlink in
#: the last component (a path checked as a file that became a link is refused), never
#: block on a FIFO at open, and do not leak the descriptor into child processes.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _opened_path(fd: int, path: Path) -> Path:
    """The real path of the file open as ``fd``: what was opened, not what was asked for.

    Linux names it in ``/proc/self/fd``; elsewhere the path is accepted only when it still
    names the opened file (same device and inode), which narrows but cannot close the race.
    """
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        info, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
        if (info.st_dev, info.st_ino) != (now.st_dev, now.st_ino):
            raise OSError("the file changed while it was opened") from None
        return Path(os.path.realpath(path))


def read_regular_file(
    path: str | Path,
    max_bytes: int,
    allowed: Iterable[Path] | None = None,
    *,
    offset: int = 0,
    length: int | None = None,
) -> bytes:
    """The bytes of the regular file ``path``: the one read of every file a scenario names.

    The file is opened once (without following a symlink in its last component), then the
    *opened* file is checked: a regular file (a FIFO or a device would block or never
    end), no larger than ``max_bytes``, and, when ``allowed`` is given, really inside one
    of those directories. Its bytes are read from that descriptor only, so a folder or
    symlink swapped by another process between :func:`resolve_user_path` and the read
    cannot redirect it outside (time-of-check to time-of-use; docs/security.md).

    Parameters
    ----------
    path : str or Path
        The file (already resolved by :func:`resolve_user_path` when ``allowed`` is given).
    max_bytes : int
        Largest file accepted, bytes (the whole file, whatever part is read).
    allowed : iterable of Path, optional
        Resolved allowed directories; None for a file the user named directly (the
        scenario on the command line), whose last component may then be a symlink.
    offset, length : int
        Read ``length`` bytes from ``offset`` (default: the whole file); the file must
        hold them all.

    Raises
    ------
    PathNotAllowedError
        When the opened file lies outside ``allowed``.
    OSError
        Including FileNotFoundError, and for a refused file (with a readable message).
    """
    path = Path(path)
    flags = _OPEN_FLAGS if allowed is not None else _OPEN_FLAGS & ~getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path) and allowed is not None:  # ELOOP: swapped for a link
            raise OSError(f"{path} became a symbolic link while it was read") from None
        raise exc from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise OSError(kind)
        if info.st_size > max_bytes:
            raise OSError(f"larger than {max_bytes:,} bytes")
        if allowed is not None:
            allowed = tuple(allowed)
            real = _opened_path(fd, path)
            if not any(real.is_relative_to(folder) for folder in allowed):
                raise PathNotAllowedError(str(path), real, allowed)
        want = info.st_size - offset if length is None else length
        if offset < 0 or want < 0 or offset + want > info.st_size:
            raise OSError(
                f"asked for bytes {offset:,}..{offset + want:,} of a {info.st_size:,}-byte file"
            )
        chunks, done = [], 0
        while done < min(want, max_bytes):  # the file may still grow: read no more
            chunk = os.pread(fd, min(want, max_bytes) - done, offset + done)
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_user_file(
    written: str, relative_to: str | Path, allowed: Iterable[Path], max_bytes: int
) -> tuple[Path, bytes]:
    """Resolve a path written in a scenario (:func:`resolve_user_path`) and read it
    (:func:`read_regular_file`, re-checked against ``allowed`` after opening).

    Returns
    -------
    (Path, bytes)
        The resolved path and the file's bytes.

    Raises
    ------
    SocsimError
        When the path is unusable or outside ``allowed`` (before or after opening).
    OSError
        When the file cannot be read or is refused (not regular, too large).
    """
    allowed = tuple(allowed)
    path = resolve_user_path(written, relative_to, allowed)
    return path, read_regular_file(path, max_bytes, allowed)


def naming_dir(loc: Loc, ctx: Context) -> Path:
    """Directory of the file whose YAML names the value at ``loc`` (an included file's
    own folder), or the scenario's folder when the value has no source mark."""
    mark = mark_of(loc.container, loc.key)
    return Path(mark.file).parent if mark is not None else Path(ctx.base_dir or ".")


def user_dirs(ctx: Context) -> tuple[Path, ...]:
    """The allowed directories of a validation :class:`~simulator.schema.Context`."""
    return ctx.allowed_dirs or allowed_dirs(ctx.base_dir or ".")


def add_allow_dir_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--allow-dir DIR`` (repeatable) to an argparse (sub)command parser."""
    parser.add_argument(
        "--allow-dir",
        action="append",
        default=[],
        metavar="DIR",
        dest="allow_dirs",
        help="let the scenario's includes and trace files lie in DIR too (repeatable)",
    )


def _module_name(text: str) -> str:
    import argparse
    import re

    from simulator.plugins import MODULE_PATTERN

    if not re.fullmatch(MODULE_PATTERN, text):
        raise argparse.ArgumentTypeError(f"'{text}' is not a module name like my_pkg.policies")
    return text


def add_allow_options(parser: argparse.ArgumentParser) -> None:
    """Add what a scenario may reach beyond its folder and installed plug-ins to a command
    that reads scenarios: ``--allow-dir DIR`` and ``--allow-plugin MODULE`` (repeatable)."""
    add_allow_dir_option(parser)
    parser.add_argument(
        "--allow-plugin",
        action="append",
        default=[],
        metavar="MODULE",
        dest="allow_plugins",
        type=_module_name,
        help="let the scenario's plugins: import MODULE and its submodules, running their "
        "code (repeatable; installed socsim plug-ins need none)",
    )
