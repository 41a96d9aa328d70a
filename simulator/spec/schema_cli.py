"""``socsim schema [-o FILE]``: the scenario format's JSON Schema, for editors.

``simulator/cli.py`` registers it with one line (:func:`add_parser`); the schema tree and
the registries are imported only when the command runs (``socsim --help`` stays fast).
"""

from __future__ import annotations

import argparse
import sys

from simulator.exitcodes import EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from simulator.output import check_output_file
    from simulator.spec.editor_schema import schema_text

    text = schema_text()
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    path = check_output_file(args.output, "the schema file")
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path} (JSON Schema draft 2020-12 of the scenario format)")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``socsim schema [-o FILE]`` to the top-level parser."""
    schema = sub.add_parser(
        "schema",
        help="write the scenario format's JSON Schema (for editors: YAML language server)",
    )
    schema.add_argument("-o", "--output", help="file to write (default: standard output)")
    schema.set_defaults(handler=cmd_schema)
