"""Safe YAML reading that remembers where every value came from.

Mappings load as :class:`YamlMap` and sequences as :class:`YamlSeq`; both are ordinary
``dict``/``list`` subclasses that also record the file and line of each entry, so that a
problem found much later (after includes and preset merging) can still name its line.
Only YAML's safe subset is accepted: the loader derives from ``yaml.SafeLoader``, so a
tag such as ``!!python/object`` has no constructor and is reported, never executed.
Aliases are shared, not copied, when loading, but everything after loading (schema
checks, preset merging, sweeps) walks the tree as if they were copied: a "billion laughs"
document of a few hundred bytes would expand to billions of values there. The composed
node graph is therefore measured with aliases expanded and refused beyond
:data:`MAX_EXPANDED_NODES`, and nesting beyond :data:`MAX_DEPTH` is refused before
Python's recursion limit is reached.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import Problem, ScenarioError, SocsimError
from simulator.spec.paths import read_regular_file

#: Most values a document may hold once its aliases are expanded (a scenario has
#: thousands; a 1,000-op inline model some tens of thousands).
MAX_EXPANDED_NODES = 1_000_000
#: Deepest nesting of mappings and sequences (a scenario nests fewer than 10 levels).
MAX_DEPTH = 100
#: Largest scenario or library file read, bytes.
MAX_FILE_BYTES = 50_000_000


class _RefusedDocument(yaml.YAMLError):
    """A document refused for its size or depth (reported like a syntax error)."""

    def __init__(self, problem: str, mark=None):
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


@dataclass(frozen=True)
class Mark:
    """Where a value stands: file and 1-based line."""

    file: str
    line: int


class YamlMap(dict):
    """A mapping that knows the :class:`Mark` of itself and of each of its keys.

    ``key_marks[key]`` is where the key is written (the line a reader looks at for a
    problem with that entry, also when its value is a block on the following lines).
    """

    __slots__ = ("key_marks", "mark")

    def __init__(self, *args, mark: Mark | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.mark = mark
        self.key_marks: dict[Any, Mark] = {}


class YamlSeq(list):
    """A sequence that knows the :class:`Mark` of itself and of each item."""

    __slots__ = ("item_marks", "mark")

    def __init__(self, *args, mark: Mark | None = None):
        super().__init__(*args)
        self.mark = mark
        self.item_marks: list[Mark | None] = []


class _LocatingLoader(yaml.SafeLoader):
    """SafeLoader that builds YamlMap/YamlSeq and rejects duplicate keys."""

    def __init__(self, stream, filename: str):
        super().__init__(stream)
        self.filename = filename
        self.duplicates: list[Problem] = []
        self._path: list[str] = []  # YAML path of the value being constructed

    def compose_node(self, parent, index):
        # composing recurses once per nesting level: stop before Python's recursion limit
        self._depth = getattr(self, "_depth", 0) + 1
        # every node (or alias) composed is at least one value once expanded: refuse as
        # soon as there are too many, not after composing them all (1e6 inline ops took
        # 241 s and 3.7 GB to compose before the count after composing refused them)
        self._composed = getattr(self, "_composed", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise _RefusedDocument(
                    f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            if self._composed > MAX_EXPANDED_NODES:
                raise _RefusedDocument(
                    f"more than {MAX_EXPANDED_NODES:,} values (MAX_EXPANDED_NODES)",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _child_path(self, key: str) -> str:
        head = "".join(self._path)
        return f"{head}.{key}" if head else key

    def _mark(self, node) -> Mark:
        return Mark(self.filename, node.start_mark.line + 1)

    def construct_yaml_map(self, node):
        data = YamlMap(mark=self._mark(node))
        yield data
        merge_tag = "tag:yaml.org,2002:merge"
        own = sum(1 for key_node, _ in node.value if key_node.tag != merge_tag)
        self.flatten_mapping(node)
        # flatten_mapping puts the keys merged in with ``<<:`` first; the mapping's own
        # keys override them (that is what merging is for), only own repeats are errors.
        merged = len(node.value) - own
        explicit: set = set()
        for index, (key_node, value_node) in enumerate(node.value):
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "found an unhashable mapping key", key_node.start_mark
                ) from None
            if index >= merged and key in explicit:
                self.duplicates.append(
                    Problem(
                        path=self._child_path(str(key)),
                        message=f"duplicate key '{key}' (first at line {data.key_marks[key].line})",
                        file=self.filename,
                        line=key_node.start_mark.line + 1,
                    )
                )
                continue
            if index >= merged:
                explicit.add(key)
            self._path.append(("." if self._path else "") + str(key))
            try:
                data[key] = self.construct_object(value_node, deep=True)
            finally:
                self._path.pop()
            data.key_marks[key] = self._mark(key_node)

    def construct_yaml_seq(self, node):
        data = YamlSeq(mark=self._mark(node))
        yield data
        for index, item in enumerate(node.value):
            self._path.append(f"[{index}]")
            try:
                data.append(self.construct_object(item, deep=True))
            finally:
                self._path.pop()
            data.item_marks.append(self._mark(item))


_LocatingLoader.add_constructor("tag:yaml.org,2002:map", _LocatingLoader.construct_yaml_map)
_LocatingLoader.add_constructor("tag:yaml.org,2002:seq", _LocatingLoader.construct_yaml_seq)


def load_yaml_text(text: str, filename: str) -> Any:
    """Parse YAML ``text`` safely, with marks; raise ScenarioError on syntax errors.

    Raises
    ------
    ScenarioError
        On a syntax error (with its line) or duplicate mapping keys.
    """
    loader = None
    try:
        # the reader rejects unprintable characters (NUL...) as soon as it is made
        loader = _LocatingLoader(text, filename)
        node = loader.get_single_node()
        if node is not None:
            _check_expanded_size(node)
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        detail = _yaml_error_detail(exc, line)
        raise ScenarioError(
            [Problem("", f"not valid YAML: {detail}", file=filename, line=line)]
        ) from None
    except ValueError as exc:  # PyYAML's int(): more than 4,300 digits
        raise ScenarioError([Problem("", f"not valid YAML: {exc}", file=filename)]) from None
    finally:
        if loader is not None:
            loader.dispose()
    if loader.duplicates:
        raise ScenarioError(loader.duplicates)
    return data


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse a node graph that holds more than MAX_EXPANDED_NODES values with its aliases
    expanded (an alias is the same node object as its anchor: sizes are memoised per node,
    so this costs one visit per distinct node)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    # iterative post-order walk: a node's size is 1 + its children's expanded sizes
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            sizes[id(node)] = 1
            continue
        children = (
            [item for pair in node.value for item in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if not children_done:
            if id(node) in sizes:
                continue
            if id(node) in open_nodes:
                raise _RefusedDocument(
                    "an alias (*name) refers to a value that contains it (a recursive structure)",
                    node.start_mark,
                )
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(id(node))
        size = 1 + sum(sizes[id(child)] for child in children)
        sizes[id(node)] = size
        if size > MAX_EXPANDED_NODES:
            raise _RefusedDocument(
                f"the document expands to more than {MAX_EXPANDED_NODES:,} values through "
                "its aliases (*name); write the values out or use presets",
                node.start_mark,
            )


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


def mark_of(container: Any, key: Any) -> Mark | None:
    """The mark of ``container[key]`` if the container recorded one."""
    if isinstance(container, YamlMap):
        return container.key_marks.get(key, container.mark)
    if isinstance(container, YamlSeq) and isinstance(key, int):
        if 0 <= key < len(container.item_marks):
            return container.item_marks[key]
        return container.mark
    return None


def plain(value: Any) -> Any:
    """Strip marks: nested YamlMap/YamlSeq become dict/list (for writing files)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
