"""The containers a scenario document is read into: ``dict``/``list`` subclasses that
remember the file and line of every entry (:mod:`simulator.spec.yamlio` builds them)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

#: Scalar types YAML builds that are immutable: deep copies share them.
_ATOMIC = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True)
class Mark:
    """Where a value stands: file and 1-based line."""

    file: str
    line: int

    def __deepcopy__(self, memo: dict) -> Mark:
        return self  # immutable: copies of a document share their marks


class YamlMap(dict):
    """A mapping that knows the :class:`Mark` of itself and of each of its keys.

    ``key_marks[key]`` is where the key is written (the line a reader looks at for a
    problem with that entry, also when its value is a block on the following lines).
    """

    __slots__ = ("key_marks", "mark")

    def __init__(self, *args: Any, mark: Mark | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mark = mark
        self.key_marks: dict[Any, Mark] = {}

    def __deepcopy__(self, memo: dict) -> YamlMap:
        # what copy.deepcopy does by default, minus copying the immutable marks and keys
        # through __reduce_ex__ (preset merging copies whole documents: that was 40 % of
        # load_scenario on the shipped examples)
        copied = YamlMap(mark=self.mark)
        memo[id(self)] = copied
        for key, value in self.items():
            copied[key] = value if type(value) in _ATOMIC else copy.deepcopy(value, memo)
        copied.key_marks.update(self.key_marks)
        return copied


class YamlSeq(list):
    """A sequence that knows the :class:`Mark` of itself and of each item."""

    __slots__ = ("item_marks", "mark")

    def __init__(self, *args: Any, mark: Mark | None = None) -> None:
        super().__init__(*args)
        self.mark = mark
        self.item_marks: list[Mark | None] = []

    def __deepcopy__(self, memo: dict) -> YamlSeq:
        copied = YamlSeq(mark=self.mark)
        memo[id(self)] = copied
        copied.extend(v if type(v) in _ATOMIC else copy.deepcopy(v, memo) for v in self)
        copied.item_marks.extend(self.item_marks)
        return copied


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


def shallow_copy(container: Any) -> Any:
    """A shallow copy of a mapping or list that keeps the loader's file/line marks."""
    if isinstance(container, YamlMap):
        out = YamlMap(container, mark=container.mark)
        out.key_marks.update(container.key_marks)
        return out
    if isinstance(container, YamlSeq):
        out_seq = YamlSeq(container, mark=container.mark)
        out_seq.item_marks.extend(container.item_marks)
        return out_seq
    return copy.copy(container)
