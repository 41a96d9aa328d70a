"""The one rule for file paths written in scenario files (includes, bandwidth traces).

A path is relative to the file that names it (absolute paths are taken as written),
symlinks are resolved, and the result must lie inside one of the allowed directories:
the directory of the top-level scenario file, the shipped ``scenarios/`` library, and
any directory the user adds (``--allow-dir DIR``, ``allow_dirs=``). A scenario received
from a colleague can therefore read nothing outside the folders its user allowed, e.g.
not ``include: [/home/me/.ssh/id_rsa]`` nor a trace ``../../../etc/passwd``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

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

    def __reduce__(self):
        return (type(self), (self.written, self.resolved, self.allowed))


def shipped_library_dir() -> Path | None:
    """The ``scenarios/`` folder shipped next to the package (its presets), if present."""
    folder = Path(__file__).resolve().parents[2] / "scenarios"
    return folder if folder.is_dir() else None


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


def naming_dir(loc: Loc, ctx: Context) -> Path:
    """Directory of the file whose YAML names the value at ``loc`` (an included file's
    own folder), or the scenario's folder when the value has no source mark."""
    mark = mark_of(loc.container, loc.key)
    return Path(mark.file).parent if mark is not None else Path(ctx.base_dir or ".")


def user_dirs(ctx) -> tuple[Path, ...]:
    """The allowed directories of a validation :class:`~simulator.schema.Context`."""
    return ctx.allowed_dirs or allowed_dirs(ctx.base_dir or ".")


def add_allow_dir_option(parser) -> None:
    """Add ``--allow-dir DIR`` (repeatable) to an argparse (sub)command parser."""
    parser.add_argument(
        "--allow-dir",
        action="append",
        default=[],
        metavar="DIR",
        dest="allow_dirs",
        help="let the scenario's includes and trace files lie in DIR too (repeatable)",
    )
