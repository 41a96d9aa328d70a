"""Name -> implementation registries for the pluggable families.

One :class:`Registry` per family (placement policies, arrival processes, later radio
models, governors, sweep executors). Each entry pairs a callable with the
:class:`~simulator.schema.Record` that validates its YAML options, so a name in YAML and
a callable in Python reach the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from simulator.errors import SocsimError
from simulator.schema import Record, nearest

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Entry(Generic[F]):
    name: str
    function: F
    options: Record
    doc: str


class Registry(Generic[F]):
    """A named family of implementations.

    Parameters
    ----------
    family : str
        What the entries are, for messages ("placement policy").
    """

    def __init__(self, family: str):
        self.family = family
        self._entries: dict[str, Entry[F]] = {}

    def register(self, name: str, options: Record, doc: str = "") -> Callable[[F], F]:
        """Decorator adding ``function`` under ``name`` with its options schema."""

        def add(function: F) -> F:
            if name in self._entries:
                raise SocsimError(f"{self.family} '{name}' is already registered")
            self._entries[name] = Entry(name, function, options, doc or (function.__doc__ or ""))
            return function

        return add

    def get(self, name: str) -> Entry[F]:
        """The entry called ``name``.

        Raises
        ------
        SocsimError
            When no entry has that name; the message names the nearest one.
        """
        try:
            return self._entries[name]
        except KeyError:
            hint = nearest(name, self._entries)
            tip = f" (did you mean '{hint}'?)" if hint else ""
            raise SocsimError(
                f"unknown {self.family} '{name}'{tip}; valid: {', '.join(self._entries)}"
            ) from None

    def schemas(self) -> Mapping[str, Record]:
        return {name: entry.options for name, entry in self._entries.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
