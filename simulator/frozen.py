"""An immutable, picklable mapping for the fields of frozen specs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


# generic in its keys and values for type checkers (some specs key by tuples); at run
# time its bases and method order are Mapping's, as before
class FrozenMap(Mapping[K, V]):
    """A read-only dict that pickles (``types.MappingProxyType`` does not).

    Specs are frozen dataclasses; their mapping fields hold a FrozenMap so that nobody
    mutates a validated scenario behind the engine's back, and sweep workers can still
    receive them.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[K, V] | None = None):
        self._data: dict[K, V] = dict(data or {})

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    # the dict's own lookups: Mapping's generic ones go through __getitem__ and a caught
    # KeyError, a hot cost where planning reads ops' attributes
    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._data.items())))

    def __reduce__(self):
        return (FrozenMap, (self._data,))

    def to_dict(self) -> dict[K, V]:
        return dict(self._data)
