"""Name -> implementation registries for the pluggable families.

One :class:`Registry` per family (placement policies, unit schedulers, dispatchers,
arrival processes, radio models, governors, sweep executors...). Each entry pairs a
callable with the :class:`~simulator.schema.Record` that validates its YAML options, so a
name in YAML and a callable in Python reach the same code.

A registry with an entry-point ``group`` also holds the plug-ins of installed packages
(``[project.entry-points."socsim.placement"]``; see docs/plugins.md). They are loaded
on the registry's first lookup, not at import: ``socsim --help`` never scans the
installed packages, and a process (a sweep worker) that looks a name up loads them
itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, TypeVar

from simulator.errors import SocsimError
from simulator.schema import Record, nearest

F = TypeVar("F", bound=Callable[..., Any])


class PluginError(SocsimError):
    """A plug-in could not be loaded or registered; the message names its entry point
    (or module) and the package it comes from."""


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
    group : str or None
        The entry-point group installed packages add entries through
        (``"socsim.placement"``); None: built-in entries and Python registrations only.
    """

    def __init__(self, family: str, group: str | None = None):
        self.family = family
        self.group = group
        self._entries: dict[str, Entry[F]] = {}
        self._plugins_loaded = group is None
        self._from_entry_points: set[str] = set()

    # -- adding entries -------------------------------------------------------------------
    def register(self, name: str, options: Record | None = None, doc: str = "") -> Callable[[F], F]:
        """Decorator adding ``function`` under ``name`` with its options schema
        (``None``: the entry takes no options)."""

        def add(function: F) -> F:
            self.add(name, function, options, doc)
            return function

        return add

    def add(self, name: str, function: F, options: Record | None = None, doc: str = "") -> F:
        """Add ``function`` under ``name`` (see :meth:`register`); returns ``function``.

        Raises
        ------
        SocsimError
            When ``name`` is taken or is not a non-empty string.

        ``function`` is what the family's callers use: a function for most, an object for
        some (a technique is a :class:`~simulator.graph.techniques.base.Technique`).
        """
        if not isinstance(name, str) or not name:
            raise SocsimError(f"a {self.family} needs a non-empty name, got {name!r}")
        if name in self._entries:
            raise SocsimError(f"{self.family} '{name}' is already registered")
        if options is None:
            options = Record({}, name=f"{name} options")
        self._entries[name] = Entry(name, function, options, doc or (function.__doc__ or ""))
        return function

    # -- looking entries up (each loads the plug-ins first) -----------------------------------
    def get(self, name: str) -> Entry[F]:
        """The entry called ``name``.

        Raises
        ------
        SocsimError
            When no entry has that name; the message names the nearest one.
        PluginError
            When an installed plug-in of this family fails to load.
        """
        self._load_plugins()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            hint = nearest(name, self._entries)
            tip = f" (did you mean '{hint}'?)" if hint else ""
            raise SocsimError(
                f"unknown {self.family} '{name}'{tip}; valid: {', '.join(self._entries)}"
            ) from None

    def schemas(self) -> Mapping[str, Record]:
        self._load_plugins()
        return {name: entry.options for name, entry in self._entries.items()}

    def names(self) -> tuple[str, ...]:
        """Every registered name, plug-ins included (a schema's ``choices``)."""
        self._load_plugins()
        return tuple(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        self._load_plugins()
        return len(self._entries)

    def registered_modules(self) -> set[str]:
        """The modules of the objects registered so far (loads no entry point)."""
        modules = (getattr(entry.function, "__module__", None) for entry in self._entries.values())
        return {m for m in modules if isinstance(m, str)}

    # -- plug-ins of installed packages -------------------------------------------------------
    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        # set first: a plug-in that looks a name up while it is imported must not recurse
        self._plugins_loaded = True
        try:
            self._load_entry_points()
        except BaseException:
            self._plugins_loaded = False  # the next lookup reports the failure again
            raise

    def _load_entry_points(self) -> None:
        # sorted by name: the registry's order (and every "valid: ..." list) is the same
        # whatever the order the packages were installed in
        points = installed_entry_points().select(group=self.group)
        for point in sorted(points, key=lambda p: (p.name, p.value)):
            if point.name in self._from_entry_points:
                continue
            where = _describe(point, self.group)
            try:
                loaded = point.load()
            except Exception as exc:
                raise PluginError(f"{where} failed to load: {type(exc).__name__}: {exc}") from exc
            self._adopt(point.name, loaded, where)
            self._from_entry_points.add(point.name)

    def _adopt(self, name: str, loaded: Any, where: str) -> None:
        """Make the loaded entry point ``name`` an entry (its module may have registered it
        already, with :meth:`register` or :mod:`simulator.plugins`)."""
        entry = self._entries.get(name)
        if isinstance(loaded, ModuleType):
            if entry is None:
                raise PluginError(
                    f"{where}: importing module '{loaded.__name__}' registered no "
                    f"{self.family} '{name}' (register it there, or point the entry point "
                    "at the function)"
                )
            return
        if entry is not None:
            if entry.function is loaded:
                return  # the module registered it when imported
            raise PluginError(
                f"{where}: a {self.family} '{name}' is already registered "
                f"({_origin(entry.function)}); rename the plug-in's entry point"
            )
        options = getattr(loaded, "options", None)
        if options is not None and not isinstance(options, Record):
            raise PluginError(
                f"{where}: its 'options' attribute must be a simulator.schema.Record, "
                f"got {type(options).__name__}"
            )
        self.add(name, loaded, options)


#: every installed entry point, by the ``sys.path`` it was read from (one scan of the
#: installed packages per process, not one per registry: ~10-20 ms each)
_SCANNED: dict[tuple[str, ...], Any] = {}


def installed_entry_points() -> Any:
    from importlib.metadata import entry_points

    key = tuple(sys.path)
    if key not in _SCANNED:
        _SCANNED.clear()
        _SCANNED[key] = entry_points()
    return _SCANNED[key]


def _describe(point: Any, group: str | None) -> str:
    dist = getattr(point, "dist", None)
    package = f", package '{dist.name} {dist.version}'" if dist is not None else ""
    return f"plug-in entry point '{point.name} = {point.value}' (group '{group}'{package})"


def _origin(function: Any) -> str:
    module = getattr(function, "__module__", None) or "?"
    return f"{module}.{getattr(function, '__qualname__', repr(function))}"
