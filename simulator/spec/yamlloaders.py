"""The YAML loader classes behind :mod:`simulator.spec.yamlio`, and the limits they enforce.

:class:`_Locating` composes nodes (counting them against :data:`MAX_EXPANDED_NODES`,
bounding the depth by :data:`MAX_DEPTH`) and builds :class:`YamlMap` / :class:`YamlSeq`
with the file and line of every entry, refusing duplicate keys; only YAML's safe subset
has constructors. It runs on PyYAML's pure parser (:class:`_PureLoader`) or libyaml's
(:data:`FAST_LOADER`, None without libyaml); both give the same events and marks.
:func:`_check_expanded_size` measures a composed document with its aliases expanded.
Read documents through :func:`simulator.spec.yamlio.load_yaml_text`, not these classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML without libyaml
    CParser = None

from simulator.errors import Problem
from simulator.spec.yamlnodes import Mark, YamlMap, YamlSeq

#: Most values a document may hold once its aliases are expanded (a scenario has
#: thousands; a 1,000-op inline model some tens of thousands).
MAX_EXPANDED_NODES = 1_000_000
#: Deepest nesting of mappings and sequences (a scenario nests fewer than 10 levels).
MAX_DEPTH = 100


class _RefusedDocument(yaml.YAMLError):
    """A document refused for its size or depth (reported like a syntax error)."""

    def __init__(self, problem: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


#: What PyYAML's safe constructors raise for an explicitly tagged value they cannot read
#: (``!!int`` with no digits: IndexError; ``!!bool`` of '': KeyError; ``!!seq x``:
#: AttributeError; ``!!map [1]``: TypeError) instead of a ConstructorError.
_CONSTRUCTOR_BUGS = (IndexError, KeyError, AttributeError, TypeError)


def _unreadable(node: yaml.Node, exc: Exception) -> yaml.constructor.ConstructorError:
    """The ConstructorError PyYAML should have raised for ``node``."""
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    return yaml.constructor.ConstructorError(
        None, None, f"this value cannot be read as {tag} ({type(exc).__name__})", node.start_mark
    )


class _Locating(Composer, SafeConstructor, Resolver):
    """A safe loader without its parser: composes nodes (counting them, bounding the
    depth) and builds YamlMap/YamlSeq, rejecting duplicate keys. The parser is the pure
    Python one (:class:`_PureLoader`) or libyaml's (:class:`_FastLoader`); both give the
    same events with the same marks, so everything from here on is one code path."""

    def __init__(self, filename: str):
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.filename = filename
        self.duplicates: list[Problem] = []
        self._path: list[str] = []  # YAML path of the value being constructed
        self._depth = 0
        self._composed = 0
        self._marks: dict[int, Mark] = {}  # 0-based line -> its Mark (many values share one)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        # composing recurses once per nesting level: stop before Python's recursion limit
        self._depth += 1
        # every node (or alias) composed is at least one value once expanded: refuse as
        # soon as there are too many, not after composing them all (1e6 inline ops took
        # 241 s and 3.7 GB to compose before the count after composing refused them)
        self._composed += 1
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
            return Composer.compose_node(self, parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return SafeConstructor.construct_object(self, node, deep)
        except _CONSTRUCTOR_BUGS as exc:
            raise _unreadable(node, exc) from None

    def _child_path(self, key: str) -> str:
        head = "".join(self._path)
        return f"{head}.{key}" if head else key

    def _mark(self, node: yaml.Node) -> Mark:
        line = node.start_mark.line
        mark = self._marks.get(line)
        if mark is None:
            mark = self._marks[line] = Mark(self.filename, line + 1)
        return mark

    def construct_yaml_map(self, node: yaml.MappingNode) -> Iterator[YamlMap]:
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

    def construct_yaml_seq(self, node: yaml.SequenceNode) -> Iterator[YamlSeq]:
        data = YamlSeq(mark=self._mark(node))
        yield data
        for index, item in enumerate(node.value):
            self._path.append(f"[{index}]")
            try:
                data.append(self.construct_object(item, deep=True))
            finally:
                self._path.pop()
            data.item_marks.append(self._mark(item))


_Locating.add_constructor("tag:yaml.org,2002:map", _Locating.construct_yaml_map)
_Locating.add_constructor("tag:yaml.org,2002:seq", _Locating.construct_yaml_seq)


class _PureLoader(Reader, Scanner, Parser, _Locating):
    """The locating loader on PyYAML's pure Python parser (~5x slower than libyaml's); its
    error messages are the ones users see for a syntax error."""

    def __init__(self, stream: str, filename: str):
        Reader.__init__(self, stream)  # rejects unprintable characters (NUL...) at once
        Scanner.__init__(self)
        Parser.__init__(self)
        _Locating.__init__(self, filename)


#: A composed node of one kind (what a composer method returns).
_Node = TypeVar("_Node", bound=yaml.Node)

#: The locating loader on libyaml's parser; None when PyYAML was built without libyaml
#: (every document is then read by the pure parser). :mod:`simulator.spec.yamlio` reads
#: its own copy, ``_FAST_LOADER`` (the switch bench/loader.py flips).
FAST_LOADER: Callable[[str, str], _Locating] | None = None

if CParser is not None:

    class _FastLoader(_Locating, CParser):
        """The locating loader on libyaml's parser; :class:`_Locating` comes first, so
        nodes are composed in Python (counted and depth-bounded), not by libyaml."""

        def __init__(self, stream: str, filename: str):
            CParser.__init__(self, stream)
            _Locating.__init__(self, filename)
            self._flow_depth = 0  # flow collections ([...], {...}) around the node

        def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:
            # inside [...] or {...} the pure scanner ends a plain scalar at '?', libyaml
            # does not: let the pure parser read such a document
            event = self.peek_event()
            if self._flow_depth and not event.style and "?" in event.value:  # plain: ""
                raise _ReadByPure("a plain scalar with '?' in a flow collection")
            return Composer.compose_scalar_node(self, anchor)

        def compose_sequence_node(self, anchor: str | None) -> yaml.SequenceNode:
            return self._flow_counted(Composer.compose_sequence_node, anchor)

        def compose_mapping_node(self, anchor: str | None) -> yaml.MappingNode:
            return self._flow_counted(Composer.compose_mapping_node, anchor)

        def _flow_counted(
            self, compose: Callable[[Any, str | None], _Node], anchor: str | None
        ) -> _Node:
            flow = bool(self.peek_event().flow_style)
            self._flow_depth += flow
            try:
                return compose(self, anchor)
            finally:
                self._flow_depth -= flow

    FAST_LOADER = _FastLoader


class _ReadByPure(yaml.YAMLError):
    """A document libyaml would read otherwise than the pure parser (never reported)."""


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
