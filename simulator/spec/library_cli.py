"""``socsim presets [NAME]`` and ``socsim --version``.

``simulator/cli.py`` registers them with one line each (:func:`add_parser`,
:func:`add_version_option`); nothing here is imported to print help but this module.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from simulator.exitcodes import EXIT_OK


def cmd_presets(args: argparse.Namespace) -> int:
    from simulator.errors import SocsimError
    from simulator.spec.library import PRESET_PREFIX, preset_entry, preset_text, shipped_presets
    from simulator.spec.paths import shipped_library_dir

    if args.name:
        entry = preset_entry(args.name)
        print(f"# preset {entry.name} ({entry.section}) in {entry.path}:{entry.line}")
        print(
            f"# use: include: [{PRESET_PREFIX}{entry.name}], then {entry.section}: ...: "
            f"{{preset: {entry.name}}}"
        )
        print(preset_text(entry))
        return EXIT_OK
    library = shipped_library_dir()
    entries = shipped_presets()
    if library is None or not entries:
        raise SocsimError(
            "this socsim has no shipped library (scenarios/): reinstall the package, whose "
            "wheel carries it"
        )
    width = max(len(name) for name in entries) + 2
    print(f"library {library}")
    for section in ("nodes", "links"):
        print(section)
        for entry in entries.values():
            if entry.section == section:
                print(f"  {entry.name:<{width}}{entry.relative}:{entry.line}")
    examples = sorted((library / "examples").glob("*.yaml"))
    print(
        f"{len(entries)} presets; a scenario in any folder includes one's file with "
        f"include: [{PRESET_PREFIX}NAME]; `socsim presets NAME` prints one.\n"
        f"{len(examples)} example scenarios in {library / 'examples'}"
    )
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``socsim presets [NAME]`` to the top-level parser."""
    presets = sub.add_parser(
        "presets", help="list the shipped presets with their files, or print one"
    )
    presets.add_argument("name", nargs="?", help="a preset to print (as written in its file)")
    presets.set_defaults(handler=cmd_presets)


class _VersionAction(argparse.Action):
    """``--version``: the version is read (package metadata) only when asked for."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: Any = argparse.SUPPRESS,
        help: str = "print socsim's version and exit",
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from simulator.version import version

        print(f"socsim {version()}")  # on stdout, as argparse's own version action
        parser.exit()


def add_version_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--version`` to the top-level parser."""
    parser.add_argument("--version", action=_VersionAction)
