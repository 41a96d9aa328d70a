"""Safe YAML reading that remembers where every value came from.

Mappings load as :class:`YamlMap` and sequences as :class:`YamlSeq`; both are ordinary
``dict``/``list`` subclasses that also record the file and line of each entry, so that a
problem found much later (after includes and preset merging) can still name its line.
Only YAML's safe subset is accepted: the loader builds with ``yaml.SafeConstructor``, so a
tag such as ``!!python/object`` has no constructor and is reported, never executed.
Aliases are shared, not copied, when loading, but everything after loading (schema
checks, preset merging, sweeps) walks the tree as if they were copied: a "billion laughs"
document of a few hundred bytes would expand to billions of values there. The composed
node graph is therefore measured with aliases expanded and refused beyond
:data:`MAX_EXPANDED_NODES`, and nesting beyond :data:`MAX_DEPTH` is refused before
Python's recursion limit is reached.

This module reads a file or text and reports what is wrong with it; the loader classes
that compose and build the values, and the limits they enforce, are
:mod:`simulator.spec.yamlloaders` (``MAX_DEPTH`` and ``MAX_EXPANDED_NODES`` are
re-exported here; patch them there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from yaml.parser import ParserError
from yaml.reader import Reader, ReaderError
from yaml.scanner import ScannerError

from simulator.errors import Problem, ScenarioError, SocsimError
from simulator.spec.paths import read_regular_file
from simulator.spec.yamlloaders import (
    _CONSTRUCTOR_BUGS,
    FAST_LOADER,
    MAX_DEPTH,
    MAX_EXPANDED_NODES,
    _check_expanded_size,
    _Locating,
    _PureLoader,
    _ReadByPure,
    _unreadable,
)
from simulator.spec.yamlnodes import Mark, YamlMap, YamlSeq, mark_of, plain

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "MAX_FILE_BYTES",
    "Mark",
    "YamlMap",
    "YamlSeq",
    "load_yaml_file",
    "load_yaml_text",
    "mark_of",
    "plain",
]

#: Largest scenario or library file read, bytes.
MAX_FILE_BYTES = 50_000_000


#: The libyaml loader (None without libyaml): the switch bench/loader.py flips to time the
#: pure parser; :func:`load_yaml_text` reads it here.
_FAST_LOADER = FAST_LOADER


#: Errors of the parser itself (not of composing or building): libyaml words them its own
#: way, so a document it refuses is read again by the pure parser, which reports it.
_PARSER_ERRORS = (ReaderError, ScannerError, ParserError, _ReadByPure)


_BLOCK_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")


def _libyaml_reads_as_pure(text: str) -> bool:
    """False for text libyaml may read otherwise than the pure parser (found by
    tests/spec/test_yaml_parsers_agree.py): characters YAML does not allow (the pure
    reader refuses them, libyaml not all), a byte-order mark after the first character
    (the pure parser reads it as text, libyaml skips it) and tabs (libyaml accepts some
    the pure scanner refuses, e.g. after a plain scalar) and a comment straight after a
    block scalar's ``|`` or ``>`` (libyaml takes it, the pure scanner refuses it). One
    more case is found while composing
    (:class:`~simulator.spec.yamlloaders._FastLoader`)."""
    return (
        Reader.NON_PRINTABLE.search(text) is None
        and "\ufeff" not in text[1:]
        and "\t" not in text
        and _BLOCK_HEADER_COMMENT.search(text) is None
    )


def load_yaml_text(text: str, filename: str) -> Any:
    """Parse YAML ``text`` safely, with marks; raise ScenarioError on syntax errors.

    libyaml's parser reads the document where PyYAML has it (parsing is ~5x faster); a
    document it refuses, and one it might read otherwise (:func:`_libyaml_reads_as_pure`),
    is read by PyYAML's pure parser, so every syntax error is reported with the pure
    parser's message and line, however PyYAML was built. Nodes are composed (counted,
    depth-bounded) and built by the same Python code either way.

    Raises
    ------
    ScenarioError
        On a syntax error (with its line) or duplicate mapping keys.
    """
    fast = _FAST_LOADER if _FAST_LOADER is not None and _libyaml_reads_as_pure(text) else None
    try:
        try:
            data, duplicates = _read(fast or _PureLoader, text, filename)
        except _PARSER_ERRORS:
            if fast is None:
                raise
            data, duplicates = _read(_PureLoader, text, filename)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        detail = _yaml_error_detail(exc, line)
        raise ScenarioError(
            [Problem("", f"not valid YAML: {detail}", file=filename, line=line)]
        ) from None
    except ValueError as exc:  # PyYAML's int(): more than 4,300 digits
        raise ScenarioError([Problem("", f"not valid YAML: {exc}", file=filename)]) from None
    if duplicates:
        raise ScenarioError(duplicates)
    return data


def _read(
    loader_class: Callable[[str, str], _Locating], text: str, filename: str
) -> tuple[Any, list[Problem]]:
    """The document of ``text`` and its duplicate-key problems, read by ``loader_class``."""
    loader = loader_class(text, filename)  # the pure reader checks the characters here
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_expanded_size(node)
        try:
            data = loader.construct_document(node) if node is not None else None
        except _CONSTRUCTOR_BUGS as exc:  # in the top-level collection's own constructor
            raise _unreadable(node, exc) from None
    finally:
        loader.dispose()
    return data, loader.duplicates


def _yaml_error_detail(exc: yaml.YAMLError, line: int | None) -> str:
    """PyYAML's problem with its context, e.g. where the unclosed bracket opened."""
    problem = getattr(exc, "problem", None)
    if not problem:
        return str(exc)
    context = getattr(exc, "context", None)
    if not context:
        return problem
    if problem.startswith("but "):  # "expected a single document ..., but found another"
        return f"{context}, {problem}"
    context_mark = getattr(exc, "context_mark", None)
    if context_mark is not None and context_mark.line + 1 != line:
        context += f" started at line {context_mark.line + 1}"
    return f"{problem} ({context})"


def load_yaml_file(path: Path, allowed: Iterable[Path] | None = None) -> Any:
    """Read and parse one YAML file, turning I/O and decoding failures into ScenarioError.

    ``allowed``: the directories an included file must really lie in once opened
    (:func:`simulator.spec.paths.read_regular_file`); None for the file the user named.
    """
    filename = str(path)
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES, allowed)
    except SocsimError as exc:  # opened outside the allowed directories
        raise ScenarioError([Problem("", str(exc), file=filename)]) from None
    except FileNotFoundError:
        raise ScenarioError([Problem("", "file not found", file=filename)]) from None
    except OSError as exc:
        raise ScenarioError(
            [Problem("", f"cannot read file: {exc.strerror or exc}", file=filename)]
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ScenarioError(
            [Problem("", "file is not UTF-8 text", file=filename, line=line)]
        ) from None
    return load_yaml_text(text, filename)
